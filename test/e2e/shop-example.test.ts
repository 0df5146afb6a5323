// examples/shop end to end, through the real programs: the shop's two services (examples/shop/services.mjs)
// and keygate serving examples/shop/profile.yaml (its targets moved to this run's free ports), consumers
// and keys made with the CLI and the admin API, and the calls a client makes. First one `keygate start`
// (PGlite unless DATABASE_URL is set): the forwarded identity, a missing scope as RFC 9457 problem
// details, both families of rate-limit fields, no workspace API. Then two `keygate gateway` programs
// sharing PostgreSQL and Redis: each limit layer (the key's bucket by plan, the address, the month)
// admits exactly its budget across both, an override made with either tool applies to the next request, and
// `npm run loadtest` under the profile audits both gateways' answers as exact.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall } from '../helpers/admin-api.js';
import { runCli } from '../helpers/cli-program.js';
import { openTestDb, pgliteDataDir } from '../helpers/db.js';
import { schemaUrl, spawnGatewayOn, type SpawnedGateway } from '../helpers/gateway-program.js';
import { startProgram, status, type Program } from '../helpers/program.js';
import { freePort } from '../helpers/redis-server.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SHOP = join(ROOT, 'examples', 'shop');
/** The secret the programs sign with (spawnGatewayOn's), so the services verify what they are told. */
const SECRET = 'test-gateway-secret-0123456789';
const PROBLEMS = 'https://shop.example/problems/';

interface Services {
  orders: number;
  catalog: number;
  child: ChildProcess;
}

/** `node examples/shop/services.mjs` on free ports; resolves once both answer /healthz. */
async function startServices(): Promise<Services> {
  const [orders, catalog] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [join(SHOP, 'services.mjs')], {
    env: { PATH: process.env.PATH, ORDERS_PORT: String(orders), CATALOG_PORT: String(catalog), GATEWAY_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const deadline = Date.now() + 30_000;
  for (const port of [orders, catalog])
    while ((await status(`http://127.0.0.1:${port}/healthz`)) !== 200) {
      if (Date.now() > deadline || child.exitCode !== null) {
        child.kill('SIGKILL'); // nothing else holds it
        throw new Error(`the shop's services did not start: ${out}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  return { orders, catalog, child };
}

function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGKILL');
  return exited;
}

/** examples/shop/profile.yaml as shipped, its two targets on this run's ports, in a folder of its own. */
function profileCopy(dir: string, svc: Services): string {
  const text = readFileSync(join(SHOP, 'profile.yaml'), 'utf8');
  expect(text).toContain('http://127.0.0.1:4101');
  expect(text).toContain('http://127.0.0.1:4102');
  const file = join(dir, 'profile.yaml');
  writeFileSync(
    file,
    text
      .replace('http://127.0.0.1:4101', `http://127.0.0.1:${svc.orders}`)
      .replace('http://127.0.0.1:4102', `http://127.0.0.1:${svc.catalog}`),
  );
  return file;
}

/** A client's call through the gateway: its key as a Bearer token, a JSON body, its address (TRUST_PROXY). */
const call = (base: string, method: string, path: string, o: { key?: string; ip?: string; body?: unknown } = {}) =>
  adminCall(base, method, path, { token: o.key, ip: o.ip ?? '203.0.113.1', body: o.body });

/** The CLI's JSON answer of a command that must succeed. */
async function cli(env: NodeJS.ProcessEnv, args: string[]): Promise<Record<string, unknown>> {
  const run = await runCli([...args, '--json'], env);
  expect(run.code, `keygate ${args.join(' ')}: ${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout);
}

/** The admin API's JSON answer of a call that must succeed. */
async function admin(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await adminCall(base, method, path, { token, body });
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
  return res.body;
}

// A consumer and its keys, made the two ways an operator can (docs/cli.md, docs/admin-api.md).
const tools = {
  async consumerCli(env: NodeJS.ProcessEnv, name: string, plan: string): Promise<number> {
    const c = await cli(env, ['orgs', 'create', '--name', name, '--plan', plan]);
    return Number(c.id);
  },
  async keyCli(env: NodeJS.ProcessEnv, consumer: number, scopes: string[]): Promise<{ id: number; secret: string }> {
    const k = await cli(env, [
      'keys',
      'create',
      '--type',
      'consumer',
      '--org',
      String(consumer),
      '--name',
      `k${randomBytes(3).toString('hex')}`,
      '--scopes',
      scopes.join(','),
    ]);
    return { id: Number(k.id), secret: String(k.secret) };
  },
  async consumerApi(base: string, token: string, name: string, plan: string): Promise<number> {
    return Number((await admin(base, token, 'POST', '/api/organizations', { name, plan })).id);
  },
  async keyApi(base: string, token: string, consumer: number, scopes: string[]) {
    const k = await admin(base, token, 'POST', '/api/keys', {
      type: 'consumer',
      organizationId: consumer,
      name: `k${randomBytes(3).toString('hex')}`,
      scopes,
    });
    return { id: Number(k.id), secret: String(k.secret) };
  },
};

describe('examples/shop through `keygate start`', () => {
  let dir: string;
  let svc: Services;
  let program: Program | undefined;
  let gw: string;
  let adminApi: string;
  let token: string;
  let reader: { id: number; secret: string };
  let readerConsumer: number;
  let drop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kg-shop-'));
    svc = await startServices();
    const profile = profileCopy(dir, svc);
    // PostgreSQL when the run has it (a schema of this file's own), else a migrated PGlite DATA_DIR.
    let dbEnv: Record<string, string>;
    if (process.env.DATABASE_URL) {
      const db = await openTestDb();
      drop = () => db.drop();
      dbEnv = { DATABASE_URL: schemaUrl(process.env.DATABASE_URL, db.schema) };
    } else {
      const dataDir = pgliteDataDir();
      drop = async () => rmSync(dataDir, { recursive: true, force: true });
      dbEnv = { DATA_DIR: dataDir };
    }
    // PGlite takes one process: the CLI's part before the start.
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, PROFILE_FILE: profile, ...dbEnv };
    token = String((await cli(env, ['admin-tokens', 'create', '--name', 'shop', '--role', 'write'])).token);
    readerConsumer = await tools.consumerCli(env, 'Reader Ltd', 'free');
    reader = await tools.keyCli(env, readerConsumer, ['orders:read', 'catalog:read']);
    const [port, adminPort, adminApiPort] = [await freePort(), await freePort(), await freePort()];
    program = await startProgram(
      {
        ...dbEnv,
        PROFILE_FILE: profile,
        PORT: String(port),
        ADMIN_PORT: String(adminPort),
        ADMIN_API_PORT: String(adminApiPort),
        HOST: '127.0.0.1',
        GATEWAY_SECRET: SECRET,
        TRUST_PROXY: '127.0.0.1',
        LOG_LEVEL: 'warn',
        ACCESS_LOG: 'off',
      },
      [],
      150_000,
    );
    gw = `http://127.0.0.1:${port}`;
    adminApi = `http://127.0.0.1:${adminApiPort}`;
  }, 300_000);

  afterAll(async () => {
    await stop(program?.child);
    await stop(svc?.child);
    await drop?.();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('starts no reference backend and serves no workspace API', async () => {
    expect(program!.output()).not.toMatch(/backend\s+http/);
    const v2 = await call(gw, 'GET', '/v2/workspaces/100/tags', { key: reader.secret });
    expect(v2.status).toBe(404);
    expect(v2.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('forwards a key of the CLI to the route of its service, telling the service who called', async () => {
    const orders = await call(gw, 'GET', '/api/orders', { key: reader.secret });
    expect(orders.status).toBe(200);
    expect(orders.body.calledBy).toMatchObject({
      keyId: reader.id,
      keyType: 'consumer',
      consumer: readerConsumer,
      plan: 'free',
      verified: true,
    });
    const product = await call(gw, 'GET', '/api/products/mug-01', { key: reader.secret });
    expect(product.status).toBe(200);
    expect(product.body.data).toMatchObject({ sku: 'mug-01' });
    expect(product.body.calledBy).toMatchObject({ keyId: reader.id });
  });

  it('refuses a key without orders:write as problem details of the profile', async () => {
    const res = await call(gw, 'POST', '/api/orders', { key: reader.secret, body: { sku: 'mug-01' } });
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({
      type: `${PROBLEMS}missing-scope`,
      title: 'The key may not call this route.',
      status: 403,
      code: 'missing-scope',
    });
    const none = await call(gw, 'GET', '/api/orders');
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ type: `${PROBLEMS}missing-key`, status: 401 });
  });

  it('says where the caller stands in both families of rate-limit fields, and on its status route', async () => {
    const res = await call(gw, 'GET', '/api/products', { key: reader.secret, ip: '203.0.113.9' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    expect(Number(res.headers.get('x-ratelimit-remaining'))).toBeLessThan(60);
    expect(res.headers.get('x-ratelimit-ip-limit')).toBe('100');
    expect(res.headers.get('ratelimit-policy')).toMatch(/"read";q=60;w=60/);
    expect(res.headers.get('ratelimit')).toMatch(/"read";r=\d+;t=\d+/);
    const st = await call(gw, 'GET', '/api/rate-limit', { key: reader.secret, ip: '203.0.113.9' });
    expect(st.status).toBe(200);
    expect(st.body.calledBy).toBeUndefined(); // answered by the gateway, not forwarded
  });

  it('takes a consumer and a key made through the admin API on the next request', async () => {
    const consumer = await tools.consumerApi(adminApi, token, 'Writer GmbH', 'pro');
    const writer = await tools.keyApi(adminApi, token, consumer, ['orders:read', 'orders:write']);
    expect(writer.secret).toMatch(/^shop_[A-Za-z0-9]{32,128}$/);
    const placed = await call(gw, 'POST', '/api/orders', { key: writer.secret, body: { sku: 'tee-02', quantity: 2 } });
    expect(placed.status).toBe(201);
    expect(placed.body.data).toMatchObject({ sku: 'tee-02', quantity: 2, createdByKey: writer.id });
    expect(placed.body.calledBy).toMatchObject({ consumer, plan: 'pro', keyId: writer.id });
    // Each consumer sees its own orders only: the service keys them by the consumer it is told.
    const own = await call(gw, 'GET', '/api/orders', { key: reader.secret });
    expect(own.body.data).toEqual([]);
  });
});

/** Wait, if needed, so that `ms` from now stays in the current wall-clock minute: the per-minute layers
 * are fixed windows aligned to the minute (src/limits/types.ts, windowStart), and a burst the boundary
 * cut would be counted in two windows. The programs keep their own clocks: no clock can be injected. */
async function clearOfMinuteEnd(ms: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((r) => setTimeout(r, left + 100));
}

/** Statuses of `n` requests sent at once, alternating between the gateways. */
async function burst(gws: string[], n: number, req: (i: number) => { key: string; ip: string; path?: string }) {
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) => {
      const r = req(i);
      return call(gws[i % gws.length], 'GET', r.path ?? '/api/products', { key: r.key, ip: r.ip });
    }),
  );
  return answers;
}

// Two gateway processes sharing one PostgreSQL schema and one Redis prefix: exactness across instances
// is a property of the shared stores, so it needs both servers (the default path has neither).
describe.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)(
  'examples/shop: the three limit layers across two gateways sharing PostgreSQL and Redis',
  () => {
    let dir: string;
    let svc: Services;
    let db: Awaited<ReturnType<typeof openTestDb>>;
    const programs: SpawnedGateway[] = [];
    let gws: string[];
    let adminApi: string;
    let token: string;
    let env: NodeJS.ProcessEnv;
    let burstKey: { id: number; secret: string } | undefined;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'kg-shop2-'));
      svc = await startServices();
      const profile = profileCopy(dir, svc);
      db = await openTestDb();
      const url = schemaUrl(process.env.DATABASE_URL!, db.schema);
      const redis = { REDIS_URL: process.env.REDIS_URL!, REDIS_KEY_PREFIX: `shop${randomBytes(4).toString('hex')}:` };
      env = { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: url, PROFILE_FILE: profile, ...redis };
      token = String((await cli(env, ['admin-tokens', 'create', '--name', 'shop', '--role', 'write'])).token);
      const adminApiPort = await freePort();
      for (const extra of [{ ADMIN_API_PORT: String(adminApiPort) }, {}] as Record<string, string>[])
        // Their access lines are what `limits replay` recounts below.
        programs.push(
          await spawnGatewayOn(url, { PROFILE_FILE: profile, ACCESS_LOG: 'on', LOG_LEVEL: 'info', ...redis, ...extra }),
        );
      await Promise.all(programs.map((p) => p.ready));
      gws = programs.map((p) => `http://127.0.0.1:${p.port}`);
      adminApi = `http://127.0.0.1:${adminApiPort}`;
    }, 300_000);

    afterAll(async () => {
      for (const p of programs) await stop(p.child);
      await stop(svc?.child);
      await db?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("admits exactly the key's read budget of its plan from a burst over it, across both", async () => {
      const consumer = await tools.consumerCli(env, 'Burst Co', 'free');
      const key = await tools.keyCli(env, consumer, ['catalog:read']);
      burstKey = key;
      await clearOfMinuteEnd(20_000);
      // Each request from an address of its own: only the key's layer can refuse.
      const answers = await burst(gws, 90, (i) => ({ key: key.secret, ip: `10.1.${i >> 8}.${i & 255}` }));
      const ok = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status === 429);
      expect(ok).toHaveLength(60);
      expect(refused).toHaveLength(30);
      for (const r of refused) {
        expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(r.body).toMatchObject({ type: `${PROBLEMS}rate-limited`, status: 429 });
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
      }
    }, 120_000);

    it('admits exactly 100 a minute from one address, whatever the keys', async () => {
      const consumer = await tools.consumerCli(env, 'Address Co', 'free');
      const keys: { id: number; secret: string }[] = [];
      for (let i = 0; i < 3; i++) keys.push(await tools.keyCli(env, consumer, ['catalog:read']));
      await clearOfMinuteEnd(20_000);
      // 40 a key, under each key's 60: only the address layer can refuse.
      const answers = await burst(gws, 120, (i) => ({ key: keys[i % 3].secret, ip: '10.2.0.1' }));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(100);
      const refused = answers.filter((a) => a.status === 429);
      expect(refused).toHaveLength(20);
      for (const r of refused) {
        expect(r.body).toMatchObject({ type: `${PROBLEMS}rate-limited`, status: 429 });
        expect(r.headers.get('x-ratelimit-ip-remaining')).toBe('0');
      }
    }, 120_000);

    it("admits exactly the consumer's monthly quota, set with the CLI, then refuses as quota-exhausted", async () => {
      const consumer = await tools.consumerCli(env, 'Quota Co', 'pro');
      const key = await tools.keyCli(env, consumer, ['catalog:read']);
      await cli(env, ['orgs', 'limits', String(consumer), '--monthly-quota', '5']);
      const answers = await burst(gws, 12, (i) => ({ key: key.secret, ip: `10.3.0.${i + 1}` }));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
      const refused = answers.filter((a) => a.status === 429);
      expect(refused).toHaveLength(7);
      for (const r of refused) expect(r.body).toMatchObject({ type: `${PROBLEMS}quota-exhausted`, status: 429 });
    }, 120_000);

    it("applies a key's override on the next request, made with the admin API or the CLI", async () => {
      const consumer = await tools.consumerApi(adminApi, token, 'Override Co', 'free');
      const key = await tools.keyApi(adminApi, token, consumer, ['catalog:read']);
      const first = await call(gws[0], 'GET', '/api/products', { key: key.secret, ip: '10.4.0.1' });
      expect(first.headers.get('x-ratelimit-limit')).toBe('60');
      await admin(adminApi, token, 'PATCH', `/api/keys/${key.id}/limits`, { read: 7 });
      for (const g of gws) {
        const next = await call(g, 'GET', '/api/products', { key: key.secret, ip: '10.4.0.1' });
        expect(next.headers.get('x-ratelimit-limit')).toBe('7');
      }
      await cli(env, ['keys', 'limits', String(key.id), '--read', '3']);
      for (const g of gws) {
        const next = await call(g, 'GET', '/api/products', { key: key.secret, ip: '10.4.0.1' });
        expect(next.headers.get('x-ratelimit-limit')).toBe('3');
      }
    }, 120_000);

    it('replays the recorded traffic against a candidate plan: what a lower budget would have refused', async () => {
      expect(burstKey, 'the burst above ran').toBeDefined();
      // Both programs' access lines, in one file, as an operator would collect them.
      const log = join(dir, 'access.log');
      writeFileSync(log, programs.map((p) => p.output()).join('\n'));
      const plans = join(dir, 'candidate.json');
      writeFileSync(
        plans,
        JSON.stringify({ free: { read: 40, write: 20, bulk: 5 }, pro: { read: 600, write: 200, bulk: 50 } }),
      );
      const r = await cli(env, ['limits', 'replay', '--access-log', log, '--plans', plans]);
      const row = (r.rows as Record<string, unknown>[]).find((x) => x.keyId === burstKey!.id);
      // The burst: 90 reads in one minute, 30 refused for real by 60; a budget of 40 refuses 50.
      expect(row).toMatchObject({ plan: 'free', requests: 90, refusedReal: 30, refusedPerMinute: 50 });
    }, 120_000);

    it("`npm run loadtest` under the profile: its audit of both gateways' answers passes", async () => {
      const consumer = await tools.consumerCli(env, 'Load Co', 'free');
      const keys = [
        await tools.keyCli(env, consumer, ['catalog:read', 'orders:read']),
        await tools.keyCli(env, consumer, ['catalog:read', 'orders:read']),
      ];
      const out = join(dir, 'loadtest');
      const args = ['--import', 'tsx', join(ROOT, 'src/loadtest/cli.ts'), '--profile', join(dir, 'profile.yaml')];
      for (const g of gws) args.push('--url', g);
      for (const k of keys) args.push('--key', k.secret);
      args.push('--route', 'GET /api/products 2', '--route', 'GET /api/orders 1');
      args.push('--requests', '300', '--no-retry-wait', '--addresses', '8', '--out', out);
      const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
        let text = '';
        const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout.on('data', (c) => (text += c));
        child.stderr.on('data', (c) => (text += c));
        child.on('exit', (code) => resolve({ code, out: text }));
      });
      expect(run.code, run.out).toBe(0);
      const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
      expect(report.audit.ok, run.out).toBe(true);
      // Over both keys' budgets: the audit saw refusals of the key layer, not only admitted answers.
      expect(report.audit.refusals).toBeGreaterThan(0);
    }, 120_000);
  },
);

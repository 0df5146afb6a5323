// Two database roles (deploy/README.md): `keygate migrate` runs as the role that owns the schema and
// grants the programs' role what they need; the real backend, gateway and CLI then run as that role,
// which owns nothing. They serve, change access and write the audit trail through the one function that
// stamps it, and the role can neither write the trail directly, nor switch its triggers off, nor purge
// what the retention keeps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ageAuditTrail, openRoleSchema, type RoleSchema } from '../helpers/db.js';
import { cliArgs, runCli } from '../helpers/cli-program.js';
import { freePort } from '../helpers/redis-server.js';
import { status, untilReady } from '../helpers/program.js';
import { seedWith, K } from '../fixtures/seed.js';

const SECRET = 'two-roles-gateway-secret-0123456789';

// A real PostgreSQL with a superuser (DATABASE_URL): PGlite has one user, so there is no second role.
describe.skipIf(!process.env.DATABASE_URL)('the programs run as a role that owns nothing', () => {
  let s: RoleSchema;
  let dir: string;
  const children: ChildProcess[] = [];
  let gateway: string;

  // The CLI's access bump reaches the gateway through Redis (the database's notification names the
  // schema of the connection's search path, which these URLs set and the gateway's channel does not).
  const redisPrefix = `tr${randomBytes(4).toString('hex')}:`;
  function env(url: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const e: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn', ...extra };
    if (process.env.REDIS_URL) e.REDIS_KEY_PREFIX = redisPrefix;
    return e;
  }
  async function start(mode: 'backend' | 'gateway', extra: Record<string, string>): Promise<ChildProcess> {
    const child = spawn(process.execPath, [...(await cliArgs()), mode], {
      env: env(s.appUrl, { GATEWAY_SECRET: SECRET, HOST: '127.0.0.1', ...extra }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    if (mode === 'gateway') await untilReady(`http://127.0.0.1:${extra.ADMIN_PORT}/readyz`, child, () => out, 150_000);
    else {
      // The backend has no readiness route: any answer on its port means it serves.
      const deadline = Date.now() + 150_000;
      while ((await status(`http://127.0.0.1:${extra.BACKEND_PORT}/`)) === 0) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`did not start: ${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return child;
  }
  const cli = async (...args: string[]) => {
    const r = await runCli([...args, '--json'], env(s.appUrl));
    expect(r.code, `keygate ${args.join(' ')}: ${r.stderr}`).toBe(0);
    return JSON.parse(r.stdout);
  };
  const call = (path: string, bearer: string, init: RequestInit = {}) =>
    fetch(gateway + path, {
      ...init,
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    });
  async function asApp(sql: string): Promise<unknown> {
    const c = new pg.Client({ connectionString: s.appUrl });
    await c.connect();
    try {
      return (await c.query(sql)).rows;
    } finally {
      await c.end();
    }
  }

  beforeAll(async () => {
    s = await openRoleSchema(process.env.DATABASE_URL!);
    dir = mkdtempSync(join(tmpdir(), 'kg-two-roles-'));
    writeFileSync(join(dir, 'seed.json'), JSON.stringify(seedWith()));
    const migrated = await runCli(['migrate'], env(s.ownerUrl, { DATABASE_APP_ROLE: s.app }));
    expect(migrated.code, migrated.stderr).toBe(0);
    const [backendPort, port, admin] = [await freePort(), await freePort(), await freePort()];
    await start('backend', {
      BACKEND_PORT: String(backendPort),
      INTERNAL_TOKEN: 'two-roles-internal-token-0123456789',
      CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      SEED_FILE: join(dir, 'seed.json'),
    });
    await start('gateway', {
      PORT: String(port),
      ADMIN_PORT: String(admin),
      UPSTREAM_URL: `http://127.0.0.1:${backendPort}`,
      ACCESS_LOG: 'off',
    });
    gateway = `http://127.0.0.1:${port}`;
  }, 300_000);
  afterAll(async () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }
    if (dir) rmSync(dir, { recursive: true, force: true });
    await s?.drop();
  });

  it('serves, changes access and audits it, and the trail verifies', async () => {
    expect((await call('/v2/workspaces/100', K.wsAdmin)).status).toBe(200);
    const invite = await call('/v2/workspaces/100/members', K.wsAdmin, {
      method: 'POST',
      body: JSON.stringify({ email: 'two-roles@acme.test', role: 'VIEWER' }),
    });
    expect(invite.status, await invite.clone().text()).toBe(201);

    const created = await cli(
      'keys',
      'create',
      '--type',
      'workspace',
      '--workspace',
      '100',
      '--name',
      'two roles',
      '--role',
      'VIEWER',
      '--scopes',
      'workspace:read',
    );
    expect((await call('/v2/workspaces/100', created.secret)).status).toBe(200);
    await cli('keys', 'revoke', String(created.id));
    const deadline = Date.now() + 20_000;
    let after = 200;
    // The gateway hears of the revocation through the database's notification, a moment after the commit.
    while (process.env.REDIS_URL && after !== 401 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      after = (await call('/v2/workspaces/100', created.secret)).status;
    }
    // Without Redis the gateway learns of it when its cached principal expires (not waited for here).
    if (process.env.REDIS_URL) expect(after).toBe(401);

    const trail = await asApp(`SELECT action, db_user FROM audit_events ORDER BY id`);
    expect(trail).toEqual(
      expect.arrayContaining([
        { action: 'seed.apply', db_user: s.app },
        { action: 'member.invite', db_user: s.app },
        { action: 'key.create', db_user: s.app },
        { action: 'key.revoke', db_user: s.app },
      ]),
    );
    const verified = await runCli(['audit', 'verify'], env(s.appUrl));
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  });

  it('a program of the role that owns nothing stops on pending migrations, naming who applies them', async () => {
    const bare = await openRoleSchema(process.env.DATABASE_URL!);
    try {
      const r = await runCli(
        ['backend'],
        env(bare.appUrl, {
          GATEWAY_SECRET: SECRET,
          INTERNAL_TOKEN: 'two-roles-internal-token-0123456789',
          CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}`,
          BACKEND_PORT: String(await freePort()),
          HOST: '127.0.0.1',
        }),
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/migrations are pending.*run `keygate migrate` as the role that owns the schema/);
    } finally {
      await bare.drop();
    }
  });

  it('the role owns nothing: no direct write to the trail, no trigger switched off, no early purge', async () => {
    await expect(
      asApp(`INSERT INTO audit_events (actor_kind, action, target_type) VALUES ('cli', 'key.forged', 'key')`),
    ).rejects.toThrow(/permission denied/);
    await expect(asApp(`UPDATE audit_events SET actor_id = 'x'`)).rejects.toThrow(/permission denied/);
    await expect(asApp(`DELETE FROM audit_events`)).rejects.toThrow(/permission denied/);
    await expect(asApp(`ALTER TABLE audit_events DISABLE TRIGGER USER`)).rejects.toThrow(/must be owner/);
    await expect(asApp(`ALTER TABLE api_keys DISABLE TRIGGER USER`)).rejects.toThrow(/must be owner/);
    // Every row 40 days old: the role asking for a day's retention still keeps the owner's 365 days.
    const superuser = new pg.Client({ connectionString: s.superUrl });
    await superuser.connect();
    try {
      await ageAuditTrail({ query: async (sql: string) => (await superuser.query(sql)).rows }, 1_000_000, 40);
    } finally {
      await superuser.end();
    }
    const [{ n: kept }] = (await asApp(`SELECT count(*)::int AS n FROM audit_events`)) as { n: number }[];
    expect(await asApp(`SELECT keygate_purge_audit(1)::int AS n`)).toEqual([{ n: 0 }]);
    expect(await asApp(`SELECT count(*)::int AS n FROM audit_events`)).toEqual([{ n: kept }]);
    const owned = (await asApp(
      `SELECT count(*)::int AS n FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname = current_user`,
    )) as { n: number }[];
    expect(owned[0].n).toBe(0);
  });
});

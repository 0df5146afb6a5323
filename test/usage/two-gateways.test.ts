// Issue 39, usage history: what the gateways answered is what the history holds. Two real gateway
// programs (`keygate gateway`) share one PostgreSQL schema; a client sends a mix of requests to both
// (forwarded with the upstream's 2xx, 3xx, 4xx and 5xx, the status route, refusals of every layer: no
// key, a bad key, another workspace, no API access, the key's and the address's rate limits, /v1's
// limit) and counts each answer it got by key and outcome, read from the answer alone. One program gets
// SIGTERM in the middle of the traffic; once both have stopped, the sums of the minute, hour and day
// tables equal the client's counts exactly. Needs DATABASE_URL (the programs are other processes).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { K, seedWith } from '../fixtures/seed.js';
import { openTestDb } from '../helpers/db.js';
import { schemaUrl, spawnGatewayOn, type SpawnedGateway } from '../helpers/gateway-program.js';
import { listenLocal } from '../helpers/listen.js';

const KEY_IDS: Record<string, number> = {
  [K.wsAdmin]: 1000,
  [K.org2Ws]: 2000,
  [K.org3Ws]: 3000,
  [K.partner]: 1020,
};
const BAD_KEY = 'svc_ws_' + 'NoSuchKey'.padEnd(36, '0');

interface Req {
  gateway: 0 | 1;
  path: string;
  headers: Record<string, string>;
  /** The key the client sent (null: none, or one that does not exist). */
  keyId: number | null;
}

/** The mix, in order; `i` spreads the addresses so only the address flood trips the address layer. */
function plan(): Req[] {
  const out: Req[] = [];
  const v2 = (secret: string | null, path: string, gateway: 0 | 1, ip: string): Req => ({
    gateway,
    path,
    headers: { ...(secret ? { authorization: `Bearer ${secret}` } : {}), 'x-forwarded-for': ip },
    keyId: secret && secret in KEY_IDS ? KEY_IDS[secret] : null,
  });
  for (let i = 0; i < 700; i++) {
    const g = (i % 2) as 0 | 1;
    const ip = `10.${(i >> 8) & 255}.${i & 255}.7`;
    const status = [200, 200, 200, 201, 302, 404, 500][i % 7];
    switch (i % 10) {
      case 0:
        out.push(v2(null, '/v2/workspaces/100/accounts', g, ip));
        break;
      case 1:
        out.push(v2(BAD_KEY, '/v2/workspaces/100/accounts', g, ip));
        break;
      case 2:
        out.push(v2(K.wsAdmin, '/v2/workspaces/101/accounts', g, ip));
        break;
      case 3:
        out.push(v2(K.wsAdmin, '/v2/workspaces/100/rate-limit', g, ip));
        break;
      case 4:
        out.push(v2(K.org2Ws, '/v2/workspaces/200/accounts', g, ip));
        break;
      case 5:
        out.push(v2(K.org3Ws, '/v2/workspaces/300/accounts', g, ip));
        break;
      case 6:
        out.push({ gateway: g, path: '/v1/email-accounts', headers: { 'x-api-key': K.partner }, keyId: 1020 });
        break;
      default:
        out.push(v2(K.wsAdmin, `/v2/workspaces/100/accounts?status=${status}`, g, ip));
    }
    // The address flood: one address, all to the program that stays, past its 100 a minute.
    if (i % 5 === 0) out.push(v2(K.wsAdmin, '/v2/workspaces/100/accounts', 1, '10.250.250.250'));
  }
  return out;
}

/** What the answer says it was, by the rules of docs/usage.md (Storage), and whose. */
function outcomeOfAnswer(r: Req, status: number, upstream: boolean, body: string): [number, string] {
  if (upstream) return [r.keyId!, `forwarded_${Math.floor(status / 100)}xx`];
  const json = JSON.parse(body);
  if (status === 200) return [r.keyId!, 'answered'];
  const code: string = json.errorCode ?? json.error_code ?? json.error?.code;
  if (code === '150005') return [r.keyId!, /IP address/.test(json.errorMessage) ? 'limited_address' : 'limited_key'];
  if (code === 'rate_limit_exceeded') return [r.keyId!, 'limited_key'];
  const unkeyed = ['150001', '150002', '150006', 'unauthorized'].includes(code);
  return [unkeyed ? 0 : r.keyId!, `refused_${code}`];
}

function send(port: number, r: Req): Promise<{ status: number; upstream: boolean; body: string } | null> {
  return new Promise((resolve) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: r.path, headers: r.headers, agent: false, timeout: 20_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, upstream: res.headers['x-upstream'] === '1', body }));
        res.on('error', () => resolve(null));
      },
    );
    // Refused or reset: the program is gone or going; no answer, nothing to count.
    req.on('error', () => resolve(null));
    req.on('timeout', () => req.destroy());
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}

// Real programs in child processes need a real PostgreSQL they can share: DATABASE_URL.
describe.skipIf(!process.env.DATABASE_URL)('usage history through two gateway programs', () => {
  let upstream: http.Server;
  let upstreamUrl: string;
  let db: Awaited<ReturnType<typeof openTestDb>>;
  const programs: SpawnedGateway[] = [];

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      req.resume();
      const status = Number(new URL(req.url!, 'http://x').searchParams.get('status') ?? 200);
      res.writeHead(status, {
        'content-type': 'application/json',
        'x-upstream': '1',
        ...(status === 302 ? { location: '/' } : {}),
      });
      res.end('{"data":[]}');
    });
    ({ url: upstreamUrl } = await listenLocal(upstream));
    db = await openTestDb();
    await applySeed(db, parseSeed(seedWith()));
    const url = schemaUrl(process.env.DATABASE_URL!, db.schema);
    const env = { UPSTREAM_URL: upstreamUrl, USAGE_FLUSH_MS: '300', DRAIN_TIMEOUT_MS: '5000' };
    for (let i = 0; i < 2; i++) programs.push(await spawnGatewayOn(url, env));
    await Promise.all(programs.map((p) => p.ready));
  }, 300_000);

  afterAll(async () => {
    for (const p of programs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(programs.map((p) => exited(p.child)));
    await db?.drop();
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
  });

  it('holds exactly what the client was answered, by key and outcome, across a SIGTERM', async () => {
    const requests = plan();
    const counted = new Map<string, number>();
    let answered = 0;
    let afterSignal = 0;
    let signalled = false;
    let next = 0;
    const worker = async () => {
      while (next < requests.length) {
        const r = requests[next++];
        const got = await send(programs[r.gateway].port, r);
        if (!got) continue;
        const [key, outcome] = outcomeOfAnswer(r, got.status, got.upstream, got.body);
        counted.set(`${key} ${outcome}`, (counted.get(`${key} ${outcome}`) ?? 0) + 1);
        if (signalled) afterSignal++;
        if (++answered === 400) {
          signalled = true;
          programs[0].child.kill('SIGTERM');
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(signalled).toBe(true);
    expect(await exited(programs[0].child)).toBe(0);
    programs[1].child.kill('SIGTERM');
    expect(await exited(programs[1].child)).toBe(0);

    const expected = Object.fromEntries([...counted].sort());
    // Every kind of answer was there to count.
    for (const o of [
      '1000 forwarded_2xx',
      '1000 forwarded_3xx',
      '1000 forwarded_4xx',
      '1000 forwarded_5xx',
      '1000 answered',
      '1000 refused_150004',
      '1000 limited_address',
      '2000 limited_key',
      '3000 refused_150007',
      '1020 limited_key',
      '0 refused_150001',
      '0 refused_150002',
    ])
      expect(expected).toHaveProperty([o]);
    expect(afterSignal).toBeGreaterThan(0);
    for (const table of ['usage_minute', 'usage_hour', 'usage_day']) {
      const rows = await db.query(
        `SELECT key_id, outcome, sum(count)::bigint AS n FROM ${table} GROUP BY key_id, outcome ORDER BY 1, 2`,
      );
      const held = Object.fromEntries(rows.map((r) => [`${r.key_id} ${r.outcome}`, Number(r.n)]).sort());
      expect({ table, held }).toEqual({ table, held: expected });
    }
    // The organization of each key's rows, 0 where no key was resolved.
    const orgs = await db.query(`SELECT DISTINCT key_id, organization_id FROM usage_day ORDER BY 1`);
    expect(orgs).toEqual([
      { key_id: 0, organization_id: 0 },
      { key_id: 1000, organization_id: 1 },
      { key_id: 1020, organization_id: 1 },
      { key_id: 2000, organization_id: 2 },
      { key_id: 3000, organization_id: 3 },
    ]);
  }, 300_000);
});

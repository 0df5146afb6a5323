// The real gateway program under a rest profile (test/fixtures/profiles/d-shop.yaml, its services on an
// upstream of the test's own), one consumer key of plan free (20 reads a minute): the load test with
// --profile audits its answers exact; the document it serves at /api/openapi.json is the profile's
// generated one; and `limits replay` recounts its access log against a candidate plan.
import http from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLocal } from '../helpers/listen.js';
import { loadtest, ROOT } from '../fixtures/profiles/d-loadtest.js';
import { openTestDb } from '../helpers/db.js';
import { schemaUrl, spawnGatewayOn, type SpawnedGateway } from '../helpers/gateway-program.js';
import { insertConsumerKey } from '../helpers/keys.js';
import { loadProfile } from '../../src/config/profile/load.js';
import { openApiDocuments } from '../../src/openapi/profile.js';
import { candidatePlans, parseAccessLine, replay, type AccessLine } from '../../src/cli/replay.js';

// The gateway is another process on the test's own PostgreSQL schema: a real server is needed.
describe.skipIf(!process.env.DATABASE_URL)('a rest profile on the real gateway: load test, document, replay', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kg-profile-gw-'));
  const file = join(dir, 'd-shop.yaml');
  let upstream: { url: string; close: () => Promise<void> };
  let db: Awaited<ReturnType<typeof openTestDb>>;
  let gw: SpawnedGateway;
  let secret: string;

  beforeAll(async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"orders":[]}');
    });
    const l = await listenLocal(server);
    upstream = { url: l.url, close: () => new Promise<void>((r) => server.close(() => r())) };
    writeFileSync(
      file,
      readFileSync(join(ROOT, 'test/fixtures/profiles/d-shop.yaml'), 'utf8').replace(
        /http:\/\/127\.0\.0\.1:410[12]/g,
        upstream.url,
      ),
    );
    db = await openTestDb();
    ({ secret } = await insertConsumerKey(db, {
      tag: 'LoadTestGatewayProfile',
      plan: 'free',
      scopes: ['orders:read'],
    }));
    // The 25 requests below must fall in one minute, as the replay's expected counts assume.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) await new Promise((r) => setTimeout(r, 60_500 - intoMinute));
    gw = await spawnGatewayOn(schemaUrl(process.env.DATABASE_URL!, db.schema), {
      PROFILE_FILE: file,
      ACCESS_LOG: 'on',
      LOG_LEVEL: 'info',
    });
    await gw.ready;
  }, 200_000);
  afterAll(async () => {
    if (gw && gw.child.exitCode === null) {
      const exited = new Promise((r) => gw.child.once('exit', r));
      gw.child.kill('SIGKILL');
      await exited;
    }
    await db?.drop();
    await upstream?.close();
  });

  it('the load test with --profile: 20 admitted of the plan, 5 refused with the profile code, the audit exact', async () => {
    const out = mkdtempSync(join(dir, 'report-'));
    const r = await loadtest([
      '--url',
      `http://127.0.0.1:${gw.port}`,
      '--key',
      secret,
      '--profile',
      file,
      '--requests',
      '25',
      '--connections',
      '1',
      '--no-retry-wait',
      '--quiet',
      '--out',
      out,
    ]);
    expect(r.code, r.stdout + r.stderr + gw.output().slice(-2000)).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.answers).toMatchObject({ admitted: 20, rateLimited: 5, byCode: { 'slow-down': 5 } });
    expect(report.audit.windows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ layer: 'key', subject: 'key 1 read', limit: 20, admitted: 20, refused: 5 }),
        expect.objectContaining({ layer: 'address', limit: 100, admitted: 20 }),
      ]),
    );
  }, 150_000);

  it("GET /api/openapi.json is the profile's generated document, without a key", async () => {
    const res = await fetch(`http://127.0.0.1:${gw.port}/api/openapi.json`);
    expect(res.status).toBe(200);
    const profile = loadProfile({
      PROFILE_FILE: file,
      ROUTES_FILE: 'config/routes.json',
      PLANS_FILE: 'config/plans.json',
    });
    expect(Buffer.from(await res.arrayBuffer())).toEqual(openApiDocuments(profile).get('/api/openapi.json'));
  });

  it('limits replay recounts the access log the gateway wrote against a lower candidate budget', async () => {
    // The access lines are written within ACCESS_FLUSH_MS; wait for all 25 keyed lines of the run.
    const deadline = Date.now() + 10_000;
    let lines: AccessLine[] = [];
    do {
      lines = gw
        .output()
        .split('\n')
        .map(parseAccessLine)
        .filter((l): l is AccessLine => l !== null && l.keyId !== null && l.route === '/api/orders');
      if (lines.length < 25) await new Promise((r) => setTimeout(r, 100));
    } while (lines.length < 25 && Date.now() < deadline);
    expect(lines).toHaveLength(25);
    expect(lines.filter((l) => l.code === 'slow-down')).toHaveLength(5);
    const profile = loadProfile({
      PROFILE_FILE: file,
      ROUTES_FILE: 'config/routes.json',
      PLANS_FILE: 'config/plans.json',
    });
    const plans = candidatePlans({ free: { read: 10, write: 10, bulk: 2 } }, 'candidate.yaml', profile);
    const report = replay(
      lines,
      { plans, organizations: new Map(), keys: new Map() },
      profile.routes,
      0,
      profile.interfaces,
    );
    const key = report.rows.find((row) => row.keyId !== null)!;
    expect(key).toMatchObject({ plan: 'free', requests: 25, refusedReal: 5, refusedPerMinute: 15, admittedNow: 0 });
  });
});

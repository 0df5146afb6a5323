// Readiness is "this process should get traffic" (listening, not draining, configuration loaded):
// every replica shares the same PostgreSQL and Redis, so a dependency outage must not make every
// pod unready at once. Dependency health is in the detailed body and in the metrics instead.
// And a dependency outage is logged once per transition, not once per refused request.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import type { TcpProxy } from '../helpers/tcp-proxy.js';
import { freePort } from '../helpers/redis-server.js';
import { openCuttableTestDb } from '../helpers/db.js';
import { createLogger } from '../../src/ops/logger.js';
import { K } from '../fixtures/seed.js';
import type { Db } from '../../src/db/index.js';

const PG = process.env.DATABASE_URL;

/** /readyz (200 throughout) until its body satisfies `done`, or the last body after 15 s. */
async function readyzUntil(s: Stack, done: (body: any) => boolean): Promise<any> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await fetch(s.adminUrl + '/readyz');
    expect(r.status).toBe(200);
    const body = await r.json();
    if (done(body) || Date.now() > deadline) return body;
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe.runIf(Boolean(PG))('readiness while PostgreSQL is away', () => {
  let cuttable: Awaited<ReturnType<typeof openCuttableTestDb>>;
  let proxy: TcpProxy;
  let db: Db & { drop(): Promise<void> };
  let s: Stack;
  let rec: Recorder;
  beforeAll(async () => {
    cuttable = await openCuttableTestDb(PG!, 300);
    ({ db, proxy } = cuttable);
    const { seedWith } = await import('../fixtures/seed.js');
    const { applySeed, parseSeed } = await import('../../src/backend/seed.js');
    await applySeed(db, parseSeed(seedWith()));
    rec = await startRecorder();
    s = await startStack({ db, mode: 'gateway', upstreamUrl: rec.url, seed: undefined });
  });
  afterAll(async () => {
    await proxy?.restore();
    await s?.close();
    await cuttable?.close();
    await rec?.close();
  });

  it('stays 200 and reports the database as down in its body and in the metrics', async () => {
    expect((await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.90.0.1' })).status).toBe(200);
    await proxy.cut();
    // The checks run in the background, once a second: the next rounds see the outage.
    const body = await readyzUntil(s, (b) => b.checks.database === 'down');
    expect(body.status).toBe('ready');
    expect(body.checks.database).toBe('down');
    const metrics = await (await fetch(s.adminUrl + '/metrics')).text();
    expect(metrics).toMatch(/keygate_dependency_up\{dependency="database"\} 0/);
    await proxy.restore();
    const back = await readyzUntil(s, (b) => b.checks.database === 'up');
    expect(back.checks.database).toBe('up');
  });
});

describe('closed mode with Redis away', () => {
  const lines: { level: number; msg: string }[] = [];
  let s: Stack;
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    });
    const deadPort = await freePort();
    s = await startStack({
      appStores: true,
      log: createLogger('info', sink),
      env: {
        REDIS_URL: `redis://127.0.0.1:${deadPort}`,
        RATE_LIMIT_FAILURE_MODE: 'closed',
        REDIS_COMMAND_TIMEOUT_MS: '100',
      },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers 503 to every request but logs the outage once, not once per request', async () => {
    lines.length = 0; // what the start logged (Redis away at start, the seed's version bumps) is not this test's
    const results = [];
    for (let i = 0; i < 60; i++)
      results.push(await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: `10.91.0.${i}` }));
    expect(results.every((r) => r.status === 503)).toBe(true);
    const loud = lines.filter((l) => l.level >= 40);
    expect(loud.length).toBeLessThanOrEqual(2);
    expect((await fetch(s.adminUrl + '/readyz')).status).toBe(200);
  });
});

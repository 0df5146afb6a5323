// Two real gateway processes (`npm run gateway`) sharing one PostgreSQL and one Redis enforce one
// budget, and an access change made through the backend reaches both on the very next request.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { freePort } from '../helpers/redis-server.js';
import { cliArgs } from '../helpers/cli-program.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { seedWith, K } from '../fixtures/seed.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import type { Db } from '../../src/db/index.js';

// Separate processes can share only real servers: PostgreSQL and Redis (CI sets both).
const PG = process.env.DATABASE_URL;
const REDIS = process.env.REDIS_URL;

describe.runIf(Boolean(PG && REDIS))('two gateway processes', () => {
  let db: Db & { drop(): Promise<void> };
  let rec: Recorder;
  let backend: Stack;
  const gws: { proc: ChildProcess; url: string; out: string }[] = [];
  const prefix = `tp${randomBytes(4).toString('hex')}:`;

  beforeAll(async () => {
    db = await openTestDb();
    await applySeed(db, parseSeed(seedWith()));
    rec = await startRecorder();
    // The backend of the access changes, in this process, on the same database and Redis prefix.
    backend = await startStack({
      db,
      mode: 'backend',
      appStores: true,
      redisPrefix: prefix,
      env: { REDIS_URL: REDIS! },
    });
    const url = new URL(PG!);
    url.searchParams.set('options', `-c search_path=${db.schema}`);
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const g = { proc: null as unknown as ChildProcess, url: `http://127.0.0.1:${port}`, out: '' };
      g.proc = spawn(process.execPath, [...(await cliArgs()), 'gateway'], {
        env: {
          ...process.env,
          DATABASE_URL: url.toString(),
          REDIS_URL: REDIS,
          REDIS_KEY_PREFIX: prefix,
          GATEWAY_SECRET: 'test-gateway-secret-0123456789',
          UPSTREAM_URL: rec.url,
          PORT: String(port),
          ADMIN_PORT: String(await freePort()),
          HOST: '127.0.0.1',
          TRUST_PROXY: '127.0.0.1',
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      g.proc.stdout!.on('data', (c) => (g.out += c));
      g.proc.stderr!.on('data', (c) => (g.out += c));
      gws.push(g);
    }
    for (const g of gws) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const ok = await fetch(g.url + '/v2/workspaces/100/rate-limit', {
          headers: { authorization: `Bearer ${K.wsAdmin}` },
        }).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
        if (Date.now() > deadline || g.proc.exitCode !== null) throw new Error(`gateway did not start: ${g.out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }, 90_000);
  afterAll(async () => {
    for (const g of gws) g.proc.kill('SIGTERM');
    await Promise.all(gws.map((g) => (g.proc.exitCode === null ? new Promise((r) => g.proc.once('exit', r)) : null)));
    await backend?.close();
    await rec?.close();
    await db?.drop();
  });

  const get = (i: number, key: string, ip: string) =>
    fetch(gws[i].url + '/v2/workspaces/100/tags', {
      headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': ip },
    }).then(async (r) => ({ status: r.status, body: await r.json() }));

  it('enforce one budget: 20 GETs over both pass, the 21st fails on either', async () => {
    // Real time: start early in a minute so the 22 requests share one window.
    const sec = new Date().getUTCSeconds();
    if (sec > 45) await new Promise((r) => setTimeout(r, (61 - sec) * 1000));
    for (let i = 0; i < 20; i++) expect((await get(i % 2, K.editorPk, `10.20.0.${i}`)).status).toBe(200);
    for (const i of [0, 1]) {
      const r = await get(i, K.editorPk, `10.20.1.${i}`);
      expect(r.status).toBe(429);
      expect(r.body.errorCode).toBe('150005');
    }
  });

  it('a key revoked through the backend is refused by both on the next request', async () => {
    for (const i of [0, 1]) expect((await get(i, K.wsViewer, `10.20.2.${i}`)).status).toBe(200);
    expect((await backend.session('DELETE', '/api-keys/1001', K.session)).status).toBe(200);
    for (const i of [0, 1]) expect((await get(i, K.wsViewer, `10.20.3.${i}`)).body.errorCode).toBe('150002');
  });
});

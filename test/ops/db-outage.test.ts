// PostgreSQL failures (README, Operations): while the database is away, a cached principal keeps serving only
// while its exactness is still proven by the access version; anything else is 503
// access_store_unavailable, and no request hangs past the query timeout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import type { TcpProxy } from '../helpers/tcp-proxy.js';
import { openCuttableTestDb } from '../helpers/db.js';
import { K } from '../fixtures/seed.js';
import type { Db } from '../../src/db/index.js';

// Needs a PostgreSQL server to cut the connection to (CI sets DATABASE_URL); the embedded PGlite
// lives in the test's own process and cannot go away.
const PG = process.env.DATABASE_URL;

describe.runIf(Boolean(PG))('database outage', () => {
  const clock = new FakeClock();
  let cuttable: Awaited<ReturnType<typeof openCuttableTestDb>>;
  let proxy: TcpProxy;
  let db: Db & { drop(): Promise<void> };
  let s: Stack;
  let rec: Recorder;
  beforeAll(async () => {
    cuttable = await openCuttableTestDb(PG!, 500);
    ({ db, proxy } = cuttable);
    rec = await startRecorder();
    s = await startStack({ clock, db, mode: 'gateway', upstreamUrl: rec.url, seed: undefined });
  });
  afterAll(async () => {
    await s?.close();
    await cuttable?.close();
    await rec?.close();
  });

  it('serves cached principals whose version still holds, refuses the rest with 503, recovers', async () => {
    const { seedWith } = await import('../fixtures/seed.js');
    const { applySeed, parseSeed } = await import('../../src/backend/seed.js');
    await applySeed(db, parseSeed(seedWith()));
    await s.stores.versions.bump(1);
    const get = (key: string) => s.request('GET', '/v2/workspaces/100/tags', { key, ip: '10.6.0.1' });
    // The seed's changes reach the gateway as NOTIFYs too, which evict organization 1's principals when
    // they arrive: warm the cache until an entry survives them.
    const cache = s.app.cache!;
    for (let settled = false, tries = 0; !settled; tries++) {
      expect(tries).toBeLessThan(50);
      expect((await get(K.wsAdmin)).status).toBe(200); // now cached
      const evicted = cache.invalidations;
      await new Promise((r) => setTimeout(r, 100));
      settled = cache.invalidations === evicted && cache.size > 0;
    }

    await proxy.cut();
    try {
      const cached = await get(K.wsAdmin);
      expect(cached.status).toBe(200);

      const t0 = performance.now();
      const uncached = await get(K.ownerPk);
      expect(uncached.status).toBe(503);
      expect(uncached.body.error.code).toBe('access_store_unavailable');
      expect(Number(uncached.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(performance.now() - t0).toBeLessThan(3_000);

      // An access change elsewhere: the cached copy can no longer be proven exact.
      await s.stores.versions.bump(1);
      const stale = await get(K.wsAdmin);
      expect(stale.status).toBe(503);
      expect(stale.body.error.code).toBe('access_store_unavailable');
    } finally {
      await proxy.restore();
    }
    // The pool reconnects by itself.
    let back = await get(K.ownerPk);
    for (let i = 0; i < 20 && back.status !== 200; i++) back = await get(K.ownerPk);
    expect(back.status).toBe(200);
  });
});

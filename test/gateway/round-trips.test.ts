// Redis round trips per request (README, Performance). With a cached principal on a standalone Redis, an accepted
// request and a request rejected by the limit each cost exactly one round trip (the gate script).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { clusterNodes, testRedisClient } from '../helpers/redis.js';
import { createRedisStores, type RedisConnection } from '../../src/limits/redis/index.js';
import { K } from '../fixtures/seed.js';

// Counting commands needs a real Redis (REDIS_URL, set in CI); the memory stores make no round trip.
describe.runIf(Boolean(process.env.REDIS_URL) || Boolean(clusterNodes()))('redis round trips', () => {
  const clock = new FakeClock();
  let s: Stack;
  let rec: Recorder;
  let redis: RedisConnection;
  let sent = 0;
  beforeAll(async () => {
    redis = testRedisClient();
    // Every command the gateway sends passes through sendCommand (cluster: per node; counted the same).
    const original = redis.sendCommand.bind(redis);
    (redis as unknown as { sendCommand: typeof original }).sendCommand = ((cmd: Parameters<typeof original>[0]) => {
      sent++;
      return original(cmd);
    }) as typeof original;
    rec = await startRecorder();
    s = await startStack({
      clock,
      mode: 'gateway',
      upstreamUrl: rec.url,
      stores: createRedisStores({ redis, prefix: `rt${randomBytes(4).toString('hex')}:`, clock }),
    });
  });
  afterAll(async () => {
    await s?.close();
    await rec?.close();
    await redis?.quit();
  });

  const perRequest = async (key: string) => {
    const before = sent;
    const r = await s.request('GET', '/v2/workspaces/100/tags', { key, ip: '10.12.0.1' });
    return { status: r.status, trips: sent - before };
  };

  // On a Cluster the keys span slots: two concurrent GETs, then two concurrent scripts, so four
  // commands in two round trips.
  const expected = clusterNodes() ? 4 : 1;

  it('one per accepted and one per rate-limited request once the key is cached (two on a Cluster)', async () => {
    const first = await perRequest(K.wsAdmin); // resolves and caches the principal
    expect(first.status).toBe(200);
    for (let i = 0; i < 19; i++) expect(await perRequest(K.wsAdmin)).toEqual({ status: 200, trips: expected });
    expect(await perRequest(K.wsAdmin)).toEqual({ status: 429, trips: expected });
  });

  it('a refused scope costs one round trip too (the headers are read, nothing is spent)', async () => {
    await perRequest(K.wsNoScope);
    const r = await perRequest(K.wsNoScope);
    expect(r).toEqual({ status: 403, trips: expected }); // Cluster: two GETs, then two concurrent GETs
  });
});

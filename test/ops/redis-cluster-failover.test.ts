// Issue 24, item 2 (the Cluster half): three primaries with one replica each, a primary killed under
// load; the replica is promoted and every instance uses it. Measured: errors answered during the
// failover, how long until every instance is back on the shared counters, requests admitted over a
// key's budget (figures in docs/redis.md). The breaker is still one for the whole Cluster (issue 20,
// defect 2, not fixed yet): during the failover every request falls back, not only those whose
// counters lived on the lost node; this test records that, it does not endorse it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResilientStores } from '../../src/limits/resilient.js';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { startReplicatedCluster, type ReplicatedCluster } from '../helpers/cluster-replicas.js';
import { alternatingLoad } from '../helpers/failover-load.js';

const CAN = hasRedisServer();
let cluster: ReplicatedCluster;
let open: Stack;
let closed: Stack;
const clock = new FakeClock();
clock.setSecond(5);

beforeAll(async () => {
  if (!CAN) return;
  cluster = await startReplicatedCluster(3_000);
  const redisPrefix = `clf${Date.now()}:`;
  const env = { REDIS_CLUSTER_NODES: cluster.nodes.join(',') };
  open = await startStack({ appStores: true, redisPrefix, clock, env: { ...env, RATE_LIMIT_FAILURE_MODE: 'open' } });
  closed = await startStack({
    appStores: true,
    redisPrefix,
    clock,
    db: open.db,
    env: { ...env, RATE_LIMIT_FAILURE_MODE: 'closed' },
  });
}, 120_000);
afterAll(async () => {
  await closed?.close();
  await open?.close();
  cluster?.stop();
});

const degraded = (s: Stack) => (s.stores as ResilientStores).degraded();

describe.runIf(CAN)('Redis Cluster with replicas', () => {
  it('a primary killed under load: its replica is promoted and every instance is back on the shared counters', async () => {
    const { results, one, admitted } = alternatingLoad(open, closed, '10.46');
    while (admitted() < 10) await one();

    const [victim] = await cluster.primaries();
    const killedAt = performance.now();
    cluster.kill(victim);
    let promotedAt = 0;
    let backAt = 0;
    let after = 0;
    const deadline = killedAt + 40_000;
    while (after < 20) {
      if (performance.now() > deadline)
        throw new Error(
          `not back within 40 s: ${JSON.stringify({ promotedAt, open: degraded(open), closed: degraded(closed) })}`,
        );
      await one();
      await new Promise((r) => setTimeout(r, 50));
      if (!promotedAt) {
        const primaries = await cluster.primaries();
        if (primaries.length === 3 && !primaries.includes(victim)) promotedAt = performance.now();
      }
      // Back: both instances on the shared counters, and the closed one answering without 503.
      const last = results[results.length - 1];
      if (promotedAt && !degraded(open) && !degraded(closed) && last.status !== 503) {
        if (!backAt) backAt = performance.now();
        after++;
      } else {
        after = 0;
        backAt = 0;
      }
    }
    const during = results.filter((r) => r.at > killedAt && r.at < backAt);
    const errors = (via: string) => during.filter((r) => r.via === via && (r.status >= 500 || r.status < 0));
    const figures = {
      requestsDuringFailover: during.length,
      errorsOpen: errors('open').length,
      errorsClosed: errors('closed').length,
      promotedAfterMs: Math.round(promotedAt - killedAt),
      everyInstanceBackAfterMs: Math.round(backAt - killedAt),
      admitted: admitted(),
      budget: 20,
    };
    console.log(`cluster failover: ${JSON.stringify(figures)}`);
    expect(errors('open')).toEqual([]);
    expect(errors('closed').every((r) => r.status === 503 && r.code === 'rate_limiter_unavailable')).toBe(true);
    expect(results.slice(-4).map((r) => r.status)).toEqual([429, 429, 429, 429]);
    expect(admitted()).toBeLessThanOrEqual(40);
  }, 120_000);
});

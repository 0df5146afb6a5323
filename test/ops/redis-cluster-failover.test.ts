// Issue 24, item 2 (the Cluster half) and issue 20, defect 2: three primaries with one replica each, a
// primary killed under load; the replica is promoted and every instance uses it. The victim owns
// neither the key's counter nor the organization's access version, so only requests whose client
// address lives on it (the IP counter, the cooldown) depend on it: those fall back (open mode) or
// are refused (closed mode) until the replica is promoted; every other request keeps the shared
// counters, and the key's budget holds exactly. Then a primary stalled (SIGSTOP) rather than killed:
// judged by its own silence, not the others'. The nodes run with cluster-require-full-coverage no
// (test/helpers/cluster-replicas.ts). Figures in docs/redis.md and deploy/README.md.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResilientStores } from '../../src/limits/resilient/index.js';
import { keySlot } from '../../src/limits/redis-cluster/slot.js';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { startReplicatedCluster, type ReplicatedCluster } from '../helpers/cluster-replicas.js';
import { alternatingLoad } from '../helpers/failover-load.js';
import { addressKey } from '../../src/http/address.js';

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

// The hash tags of the requests' counters (src/limits/counters.ts, src/limits/redis/keys.ts):
// K.wsAdmin is key 1000 of organization 1; its `read` bucket has a budget of 20.
const KEY_TAG = 'k:1000:read';
const ORG_TAG = '1';
const BUDGET = 20;

describe.runIf(CAN)('Redis Cluster with replicas', () => {
  it('a primary killed under load: only requests on it fall back, and its promoted replica is used at once', async () => {
    const { results, one, admitted } = alternatingLoad(open, closed, '10.46');
    while (admitted() < 10) await one();

    const ownerBefore = await cluster.slotOwners();
    const fixed = new Set([ownerBefore(keySlot(KEY_TAG)), ownerBefore(keySlot(ORG_TAG))]);
    const victim = (await cluster.primaries()).find((port) => !fixed.has(port))!;
    const onVictim = (ip: string) =>
      ownerBefore(keySlot(`ip:${addressKey(ip)}`)) === victim || ownerBefore(keySlot(addressKey(ip))) === victim;
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
    const closedOn = (dead: boolean) => during.filter((r) => r.via === 'closed' && onVictim(r.ip) === dead);
    const refused = (rs: typeof during) => rs.filter((r) => r.status === 503);
    const errors = (via: string) => during.filter((r) => r.via === via && (r.status >= 500 || r.status < 0));
    const last503 = Math.max(killedAt, ...refused(during).map((r) => r.at));
    // The first request on the lost node's slots that closed mode answers again: the new primary in use.
    const served = results.find((r) => r.at > killedAt && r.via === 'closed' && onVictim(r.ip) && r.status !== 503);
    const figures = {
      requestsDuringFailover: during.length,
      closedHealthyNodes: closedOn(false).length,
      closed503HealthyNodes: refused(closedOn(false)).length,
      closedDeadNode: closedOn(true).length,
      closed503DeadNode: refused(closedOn(true)).length,
      errorsOpen: errors('open').length,
      promotedAfterMs: Math.round(promotedAt - killedAt),
      last503AfterMs: Math.round(last503 - killedAt),
      deadNodeServedAfterMs: served ? Math.round(served.at - killedAt) : null,
      everyInstanceBackAfterMs: Math.round(backAt - killedAt),
      admitted: admitted(),
      budget: BUDGET,
    };
    console.log(`cluster failover: ${JSON.stringify(figures)}`);
    expect(errors('open')).toEqual([]);
    expect(errors('closed').every((r) => r.status === 503 && r.code === 'rate_limiter_unavailable')).toBe(true);
    // Requests whose counters live on the healthy primaries never notice the failover.
    expect(refused(closedOn(false))).toEqual([]);
    // The key's counter lives on a healthy primary: its budget holds exactly in open mode too.
    expect(admitted()).toBeLessThanOrEqual(BUDGET);
    // The promoted replica is used as soon as the test sees it promoted (it polls every request).
    expect(last503 - promotedAt).toBeLessThan(1_500);
    expect(results.slice(-4).map((r) => r.status)).toEqual([429, 429, 429, 429]);
  }, 120_000);

  it('a primary stalled (SIGSTOP: connections open and silent): only requests on it are refused, and it is used again once it answers', async () => {
    const { results, one } = alternatingLoad(open, closed, '10.47');
    for (let n = 0; n < 4; n++) await one();
    const owner = await cluster.slotOwners();
    const fixed = new Set([owner(keySlot(KEY_TAG)), owner(keySlot(ORG_TAG))]);
    const victim = (await cluster.primaries()).find((port) => !fixed.has(port))!;
    const onVictim = (ip: string) =>
      owner(keySlot(`ip:${addressKey(ip)}`)) === victim || owner(keySlot(addressKey(ip))) === victim;
    const stoppedAt = performance.now();
    // Shorter than cluster-node-timeout: no failover, the node itself comes back.
    cluster.pause(victim);
    while (performance.now() - stoppedAt < 2_500) await one();
    cluster.resume(victim);
    const resumedAt = performance.now();
    let backAt = 0;
    while (!backAt) {
      if (performance.now() - resumedAt > 10_000) throw new Error('the stalled primary was not used again within 10 s');
      await one();
      const last = results[results.length - 1];
      if (last.via === 'closed' && onVictim(last.ip) && last.status !== 503) backAt = performance.now();
      await new Promise((r) => setTimeout(r, 50));
    }
    const during = results.filter((r) => r.at > stoppedAt && r.at < resumedAt);
    const closedOn = (dead: boolean) => during.filter((r) => r.via === 'closed' && onVictim(r.ip) === dead);
    const refused = (rs: typeof during) => rs.filter((r) => r.status === 503);
    const figures = {
      requestsWhileStalled: during.length,
      closedHealthyNodes: closedOn(false).length,
      closed503HealthyNodes: refused(closedOn(false)).length,
      closedStalledNode: closedOn(true).length,
      closed503StalledNode: refused(closedOn(true)).length,
      usedAgainAfterResumeMs: Math.round(backAt - resumedAt),
      slowestMs: Math.max(...during.map((r) => r.ms)),
    };
    console.log(`cluster stall: ${JSON.stringify(figures)}`);
    expect(during.filter((r) => r.via === 'open' && (r.status >= 500 || r.status < 0))).toEqual([]);
    expect(refused(closedOn(false))).toEqual([]);
    expect(refused(closedOn(true)).length).toBeGreaterThan(0);
    // A probe a second while open, and at once when a late reply arrives.
    expect(backAt - resumedAt).toBeLessThan(3_000);
  }, 60_000);
});

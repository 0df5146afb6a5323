// Redis Cluster (README, Operations): counters stay exact while Redis Cluster moves their slot to another primary. Each stage of
// a slot migration is visited on purpose: served by the old owner, ASK redirects once the key has
// moved, MOVED once the slot has a new owner; the client (ioredis) follows every one.
import { randomBytes } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { createRedisClient, createRedisStores } from '../../src/limits/redis/index.js';
import { spendOne, windowStart } from '../../src/limits/types.js';

// Provided by the `cluster` project (vitest.config.ts); the main project has no cluster to reshard.
const NODES = inject('redisClusterNodes');

describe.runIf(Boolean(NODES))('resharding', () => {
  it('keeps counting exactly through MIGRATING, ASK and MOVED', async () => {
    const nodes = NODES!.split(',').map((n) => {
      const [host, port] = n.split(':');
      return { host, port: Number(port), admin: new Redis({ host, port: Number(port) }) };
    });
    const clock = { now: () => Date.UTC(2026, 10, 22, 12, 0, 30) };
    const prefix = `rs${randomBytes(4).toString('hex')}:`;
    const stores = createRedisStores({
      redis: createRedisClient({ clusterNodes: nodes.map((n) => `${n.host}:${n.port}`), commandTimeoutMs: 2000 }),
      prefix,
      clock,
    });
    const counter = { id: 'k:reshard:read', limit: 1000 };
    const key = `${prefix}rl:{${counter.id}}:${windowStart(clock.now())}`;
    let hits = 0;
    const hitSome = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const s = await spendOne(stores.limiter, counter);
        hits++;
        expect(s.used).toBe(hits); // exact, in order, through every redirect
      }
    };
    try {
      const slot = (await nodes[0].admin.cluster('KEYSLOT', key)) as number;
      const ids = await Promise.all(nodes.map(async (n) => (await n.admin.cluster('MYID')) as string));
      const owners = await Promise.all(nodes.map((n) => ownsSlot(n.admin, slot)));
      const from = owners.indexOf(true);
      const to = (from + 1) % nodes.length;

      await hitSome(10);
      await nodes[to].admin.cluster('SETSLOT', slot, 'IMPORTING', ids[from]);
      await nodes[from].admin.cluster('SETSLOT', slot, 'MIGRATING', ids[to]);
      await hitSome(10); // still on the old owner
      await nodes[from].admin.migrate(nodes[to].host, nodes[to].port, key, 0, 5000);
      await hitSome(10); // ASK: the key is on the new owner, the slot not yet
      for (const n of nodes) await n.admin.cluster('SETSLOT', slot, 'NODE', ids[to]);
      await hitSome(10); // MOVED: the client's slot map is stale until it refreshes
      expect(hits).toBe(40);
      expect(Number(await nodes[to].admin.get(key))).toBe(40);
      expect(await ownsSlot(nodes[to].admin, slot)).toBe(true);
    } finally {
      await stores.close();
      for (const n of nodes) await n.admin.quit();
    }
  });
});

async function ownsSlot(admin: Redis, slot: number): Promise<boolean> {
  const me = (await admin.cluster('MYID')) as string;
  const shards = await admin.cluster('SLOTS');
  return shards.some(([lo, hi, primary]) => slot >= lo && slot <= hi && primary?.[2] === me);
}

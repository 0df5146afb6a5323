// The months' checkpoint against the Redis stores themselves (standalone here, a Cluster in the
// `cluster` project): a month's counter Redis lost, or answers below what was checkpointed, is raised
// to the checkpoint before it is spent on, by the batched gate and by the single month spend (the
// uncached path, and every spend on a Cluster); a read shows at least the checkpoint; the checkpoint
// keeps the highest count any instance wrote. The real programs: test/ops/month-durability.test.ts.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStores, type RedisConnection, type RedisStores } from '../../src/limits/redis/index.js';
import { MonthCheckpoint } from '../../src/limits/month-checkpoint.js';
import { monthStart, type CounterRef, type GateRequest } from '../../src/limits/types.js';
import { haveRedis, testRedisClient } from '../helpers/redis.js';
import { openTestDb } from '../helpers/db.js';
import { FakeClock } from '../helpers/stack.js';
import type { Db } from '../../src/db/index.js';

const clock = new FakeClock(Date.UTC(2026, 11, 4, 12, 0, 0));
const MONTH = monthStart(clock.now());
const prefix = `mc${randomBytes(4).toString('hex')}:`;
let db: Db & { drop(): Promise<void> };
let redis: RedisConnection;
let a: RedisStores;
let b: RedisStores;
let checkA: MonthCheckpoint;
let checkB: MonthCheckpoint;

// Needs a Redis to lose a counter from (REDIS_URL, or the cluster project's); the database may be PGlite.
describe.skipIf(!haveRedis())("a month's counter restored from the checkpoint", () => {
  beforeAll(async () => {
    db = await openTestDb();
    redis = testRedisClient();
    // Two instances: each its own checkpoint and connection, one Redis and one database.
    checkA = new MonthCheckpoint(db, clock, 60_000);
    checkB = new MonthCheckpoint(db, clock, 60_000);
    a = createRedisStores({ redis, prefix, clock, month: checkA });
    b = createRedisStores({ redis: testRedisClient(), prefix, clock, month: checkB });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  const refs = (org: number): [CounterRef, CounterRef, CounterRef] => [
    { id: `k:${org}:read`, limit: 1000 },
    { id: `ip:10.9.${org}.1`, limit: 1000 },
    { id: `m:${org}`, limit: 10, month: true },
  ];
  const monthKey = (org: number) => `${prefix}rl:{m:${org}}:${MONTH}`;
  const gate = async (s: RedisStores, org: number) => {
    const req: GateRequest = { ip: `10.9.${org}.1`, orgId: org, version: 0, spend: refs(org) };
    const r = await s.gate(req);
    if (r.kind !== 'spent') throw new Error(`unexpected ${r.kind}`);
    return r.hit;
  };
  const spend = async (s: RedisStores, org: number) => (await s.limiter.spend(refs(org), 1))[2];

  for (const [path, spendOn] of [
    ['the batched gate', async (s: RedisStores, org: number) => (await gate(s, org)).month!],
    ['the single month spend', spend],
  ] as const)
    it(`${path}: a lost counter starts again from the checkpoint, and the quota holds`, async () => {
      const org = path === 'the batched gate' ? 901 : 902;
      for (let n = 0; n < 6; n++) await spendOn(n % 2 ? b : a, org);
      await checkA.flush();
      await checkB.flush();
      expect(await db.query('SELECT used FROM month_counts WHERE counter_id = $1', [`m:${org}`])).toEqual([
        { used: 6 },
      ]);
      await checkA.flush(); // a reads back b's 6

      await redis.del(monthKey(org));
      expect((await spendOn(a, org)).used).toBe(7);
      expect(Number(await redis.get(monthKey(org)))).toBe(7);
      // Answered below what the instance knows (a replica that lacked part of it): raised as well.
      await redis.set(monthKey(org), '2');
      expect((await spendOn(a, org)).used).toBe(8);
      let admitted = 0;
      for (let n = 0; n < 6; n++) if ((await spendOn(n % 2 ? a : b, org)).used <= 10) admitted++;
      expect(admitted).toBe(2);
      // A read (the rate-limit report) of a lost counter shows the checkpoint.
      await checkA.flush();
      await redis.del(monthKey(org));
      expect((await a.limiter.spend(refs(org), 0))[2].used).toBe(10);
    });

  it('the checkpoint keeps the highest count written, and a failed write is kept for the next', async () => {
    const lower = new MonthCheckpoint(db, clock, 60_000);
    await lower.load(['m:903'], MONTH);
    lower.seen('m:903', MONTH, 5);
    await lower.flush();
    const other = new MonthCheckpoint(db, clock, 60_000);
    await other.load(['m:903'], MONTH);
    expect(other.floor('m:903', MONTH)).toBe(5);
    other.seen('m:903', MONTH, 3); // below what it knows: nothing to write
    await other.flush();
    expect(await db.query(`SELECT used FROM month_counts WHERE counter_id = 'm:903'`)).toEqual([{ used: 5 }]);

    const errors: string[] = [];
    const failing = new MonthCheckpoint(
      {
        query: async () => {
          throw new Error('database away');
        },
      },
      clock,
      60_000,
      (err) => errors.push(err.message),
    );
    await failing.load(['m:904'], MONTH);
    // Not loaded: the spend goes on from Redis alone, and no query is made per request meanwhile.
    expect(failing.floor('m:904', MONTH)).toBeUndefined();
    failing.seen('m:904', MONTH, 9);
    await failing.flush();
    expect(failing.floor('m:904', MONTH)).toBe(9);
    expect(errors).toEqual(['database away', 'database away']);
  });
});

// The per-organization accepted/refused counts behind the console's chart: minutes on the clock, the
// last hour only, nothing lost when a flush fails; with Redis, two gateways' counts read as one fleet.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { OrgTraffic } from '../../src/admin-api/traffic.js';
import { FakeClock } from '../helpers/stack.js';
import { haveRedis, testRedisClient } from '../helpers/redis.js';

const MIN = 60_000;

describe('in memory', () => {
  it('counts per organization per minute, oldest first, the current minute last, an hour long', async () => {
    const clock = new FakeClock();
    clock.setSecond(5);
    const t = new OrgTraffic({ clock });
    t.record(1, false);
    t.record(1, false);
    t.record(1, true);
    t.record(2, true);
    clock.advance(MIN);
    t.record(1, false);
    const s = await t.series(1, 60);
    expect(s).toHaveLength(60);
    expect(s[59]).toEqual({ minute: Math.floor(clock.now() / MIN) * 60, accepted: 1, refused: 0 });
    expect(s[58]).toMatchObject({ accepted: 2, refused: 1 });
    expect(s.slice(0, 58).every((p) => p.accepted === 0 && p.refused === 0)).toBe(true);
    expect((await t.series(2, 60))[58]).toMatchObject({ accepted: 0, refused: 1 });
    // An hour later the first minute is out of the window and out of memory.
    clock.advance(60 * MIN);
    t.record(3, false);
    expect((await t.series(1, 60)).every((p) => p.accepted === 0 && p.refused === 0)).toBe(true);
    await t.close();
  });
});

// Flushing and the fleet-wide read need a real Redis (REDIS_URL); without one only the memory half runs.
describe.skipIf(!haveRedis())('with Redis', () => {
  const redis = haveRedis() ? testRedisClient() : null;
  afterAll(() => redis?.disconnect());

  it('two gateways flush in batches and either reads the sum; an unflushed count is included', async () => {
    const clock = new FakeClock();
    const prefix = `t${randomBytes(5).toString('hex')}:`;
    const a = new OrgTraffic({ clock, redis, prefix, flushMs: 3_600_000 });
    const b = new OrgTraffic({ clock, redis, prefix, flushMs: 3_600_000 });
    for (let i = 0; i < 5; i++) a.record(7, false);
    b.record(7, false);
    b.record(7, true);
    await a.flush();
    await b.flush();
    a.record(7, true); // not flushed yet: a's own reading still shows it
    const fromB = await b.series(7, 60);
    expect(fromB[59]).toMatchObject({ accepted: 6, refused: 1 });
    const fromA = await a.series(7, 60);
    expect(fromA[59]).toMatchObject({ accepted: 6, refused: 2 });
    const key = `${prefix}tr:{7}:${Math.floor(clock.now() / MIN)}`;
    expect(await redis!.hgetall(key)).toEqual({ a: '6', r: '1' });
    const ttl = await redis!.pttl(key);
    expect(ttl).toBeGreaterThan(60 * MIN);
    expect(ttl).toBeLessThanOrEqual(66 * MIN);
    await a.close();
    await b.close();
  });

  it('keeps the counts when a flush fails and writes them with the next one', async () => {
    const clock = new FakeClock();
    const prefix = `t${randomBytes(5).toString('hex')}:`;
    let fail = true;
    const real = redis!;
    const flaky = {
      pipeline: () => {
        const p = real.pipeline();
        if (!fail) return p;
        return {
          ...p,
          hincrby: () => undefined,
          pexpire: () => undefined,
          exec: () => Promise.reject(new Error('connection lost')),
        };
      },
    } as unknown as typeof real;
    const t = new OrgTraffic({ clock, redis: flaky, prefix, flushMs: 3_600_000 });
    t.record(9, false);
    t.record(9, true);
    await t.flush();
    fail = false;
    t.record(9, false);
    await t.flush();
    expect(await real.hgetall(`${prefix}tr:{9}:${Math.floor(clock.now() / MIN)}`)).toEqual({ a: '2', r: '1' });
    await t.close();
  });
});

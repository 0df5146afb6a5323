// One suite for every SharedStores implementation and composition (STYLE.md habit 3), a contract each
// must keep: memory always, and memory behind the breaker; Redis when REDIS_URL is set, alone and as
// src/app/stores.ts composes it (behind its breaker, the memory store as open mode's fallback, the
// fleet's share); a Redis Cluster alone and split by node behind a breaker per primary in the
// `cluster` project. Windows and cooldowns are driven by a fake clock (habit 4), never by sleeping.

import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { Redis, type Cluster } from 'ioredis';
import { pino } from 'pino';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import { createRedisClient, createRedisStores, type RedisStores } from '../../src/limits/redis/index.js';
import { createResilientStores, type ConnectionEvents } from '../../src/limits/resilient/index.js';
import { spendPair, type CounterRef, type SharedStores } from '../../src/limits/types.js';
import type { Clock } from '../../src/ops/clock.js';

/** A clock the test moves by hand. */
interface FakeClock extends Clock {
  set(ms: number): void;
  advance(ms: number): void;
}

function fakeClock(start: number): FakeClock {
  let t = start;
  return {
    now: () => t,
    set: (ms) => {
      t = ms;
    },
    advance: (ms) => {
      t += ms;
    },
  };
}

/** 2030-01-01T00:00:00Z plus 12.345 s: a minute boundary is known exactly. */
const MINUTE = 1_893_456_000_000;
const T0 = MINUTE + 12_345;

type Factory = (clock: Clock) => SharedStores;

/**
 * The composition src/app/stores.ts builds: the shared store behind its breakers (one per Cluster
 * primary), the memory store as open mode's fallback, the fleet's share when the store keeps a live set.
 */
function behindBreaker(
  clock: Clock,
  primary: SharedStores & Partial<Pick<RedisStores, 'addCounts' | 'fleet' | 'topology'>>,
  connection?: ConnectionEvents,
): SharedStores {
  return createResilientStores({
    primary,
    fallback: createMemoryStores({ clock }),
    clock,
    mode: 'open',
    log: pino({ level: 'silent' }),
    fleet: primary.fleet,
    connection,
    topology: primary.topology,
  });
}

function storeSuite(name: string, factory: Factory): void {
  describe(`SharedStores: ${name}`, () => {
    let clock: FakeClock;
    let stores: SharedStores;

    beforeEach(() => {
      clock = fakeClock(T0);
      stores = factory(clock);
    });

    afterEach(async () => {
      await stores.close();
    });

    const key = (limit = 20): CounterRef => ({ id: 'k:1000:read', limit });
    const ip = (limit = 100, addr = '203.0.113.7'): CounterRef => ({ id: `ip:${addr}`, limit });

    describe('rate limiter', () => {
      it('allows up to the limit and rejects the next hit, still spending it', async () => {
        for (let n = 1; n <= 20; n++) {
          const r = await spendPair(stores.limiter, key(), ip());
          expect(r.allowed).toBe(true);
          expect(r.key).toEqual({ limit: 20, used: n, remaining: 20 - n, reset: MINUTE / 1000 + 60 });
        }
        const r = await spendPair(stores.limiter, key(), ip());
        expect(r.allowed).toBe(false);
        expect(r.key).toEqual({ limit: 20, used: 21, remaining: 0, reset: MINUTE / 1000 + 60 });
        expect(r.ip).toEqual({ limit: 100, used: 21, remaining: 79, reset: MINUTE / 1000 + 60 });
      });

      it('rejects when only the IP layer is over, and spends both counters anyway', async () => {
        const small = ip(2);
        await spendPair(stores.limiter, key(), small);
        await spendPair(stores.limiter, key(), small);
        const r = await spendPair(stores.limiter, key(), small);
        expect(r.allowed).toBe(false);
        expect(r.key.used).toBe(3);
        expect(r.key.remaining).toBe(17);
        expect(r.ip).toMatchObject({ used: 3, remaining: 0 });
        const [k, i] = await stores.limiter.spend([key(), small], 0);
        expect(k!.used).toBe(3);
        expect(i!.used).toBe(3);
      });

      it('reports reset as the next minute boundary in unix seconds, at both ends of a window', async () => {
        clock.set(MINUTE);
        expect((await spendPair(stores.limiter, key(), ip())).key.reset).toBe(MINUTE / 1000 + 60);
        clock.set(MINUTE + 59_999);
        const r = await spendPair(stores.limiter, key(), ip());
        expect(r.key.reset).toBe(MINUTE / 1000 + 60);
        expect(r.ip.reset).toBe(MINUTE / 1000 + 60);
        expect(r.key.used).toBe(2);
      });

      it('starts the next window fresh', async () => {
        for (let n = 0; n < 21; n++) await spendPair(stores.limiter, key(), ip());
        clock.set(MINUTE + 60_000);
        const r = await spendPair(stores.limiter, key(), ip());
        expect(r.allowed).toBe(true);
        expect(r.key).toEqual({ limit: 20, used: 1, remaining: 19, reset: MINUTE / 1000 + 120 });
        expect(r.ip.used).toBe(1);
      });

      it('keeps counters of different ids independent', async () => {
        const write: CounterRef = { id: 'k:1000:write', limit: 5 };
        const otherKey: CounterRef = { id: 'k:1001:read', limit: 20 };
        const otherIp = ip(100, '198.51.100.1');
        await spendPair(stores.limiter, key(), ip());
        await spendPair(stores.limiter, key(), ip());
        await spendPair(stores.limiter, write, ip());
        await spendPair(stores.limiter, otherKey, otherIp);
        const states = await stores.limiter.spend([key(), write, otherKey, ip(), otherIp], 0);
        expect(states.map((s) => s.used)).toEqual([2, 1, 1, 3, 1]);
      });

      it('peek reads without spending, including counters never hit', async () => {
        await spendPair(stores.limiter, key(), ip());
        const fresh: CounterRef = { id: 'k:9999:bulk', limit: 3 };
        for (let n = 0; n < 3; n++) {
          const [k, i, f] = await stores.limiter.spend([key(), ip(), fresh], 0);
          expect(k).toEqual({ limit: 20, used: 1, remaining: 19, reset: MINUTE / 1000 + 60 });
          expect(i!.used).toBe(1);
          expect(f).toEqual({ limit: 3, used: 0, remaining: 3, reset: MINUTE / 1000 + 60 });
        }
        expect(await stores.limiter.spend([], 0)).toEqual([]);
        expect((await spendPair(stores.limiter, key(), ip())).key.used).toBe(2);
      });

      it('counts concurrent hits exactly', async () => {
        const results = await Promise.all(Array.from({ length: 200 }, () => spendPair(stores.limiter, key(), ip(150))));
        // Each hit saw a distinct count: no two read the same value before writing.
        expect(results.map((r) => r.key.used).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 200 }, (_, n) => n + 1),
        );
        expect(results.filter((r) => r.allowed)).toHaveLength(20);
        const [k, i] = await stores.limiter.spend([key(), ip(150)], 0);
        expect(k!.used).toBe(200);
        expect(i).toMatchObject({ used: 200, remaining: 0 });
      });
    });

    describe('failed-authentication cooldown', () => {
      const addr = '192.0.2.10';

      it('starts a 15-minute cooldown on the 5th failure, with exact seconds left', async () => {
        for (let n = 0; n < 4; n++) {
          await stores.cooldown.recordFailure(addr);
          clock.advance(1_000);
        }
        expect(await stores.cooldown.check(addr)).toBe(0);
        await stores.cooldown.recordFailure(addr);
        expect(await stores.cooldown.check(addr)).toBe(900);
        clock.advance(500);
        expect(await stores.cooldown.check(addr)).toBe(900); // 899.5 s rounds up
        clock.advance(100_000);
        expect(await stores.cooldown.check(addr)).toBe(800);
        clock.advance(799_499);
        expect(await stores.cooldown.check(addr)).toBe(1); // 1 ms left still answers at least 1
      });

      it('ends the cooldown after 15 minutes, and counts afresh after it', async () => {
        for (let n = 0; n < 5; n++) await stores.cooldown.recordFailure(addr);
        clock.advance(15 * 60_000);
        expect(await stores.cooldown.check(addr)).toBe(0);
        for (let n = 0; n < 4; n++) await stores.cooldown.recordFailure(addr);
        expect(await stores.cooldown.check(addr)).toBe(0);
        await stores.cooldown.recordFailure(addr);
        expect(await stores.cooldown.check(addr)).toBe(900);
      });

      it('forgets failures 15 minutes after the first one', async () => {
        for (let n = 0; n < 4; n++) await stores.cooldown.recordFailure(addr);
        clock.advance(15 * 60_000);
        await stores.cooldown.recordFailure(addr);
        expect(await stores.cooldown.check(addr)).toBe(0);
        // That failure opened a new window: three more make four, still no cooldown.
        for (let n = 0; n < 3; n++) await stores.cooldown.recordFailure(addr);
        expect(await stores.cooldown.check(addr)).toBe(0);
        await stores.cooldown.recordFailure(addr);
        expect(await stores.cooldown.check(addr)).toBe(900);
      });

      it('keeps the failures of different IPs independent', async () => {
        const other = '192.0.2.11';
        for (let n = 0; n < 4; n++) await stores.cooldown.recordFailure(addr);
        await stores.cooldown.recordFailure(other);
        expect(await stores.cooldown.check(addr)).toBe(0);
        expect(await stores.cooldown.check(other)).toBe(0);
        await stores.cooldown.recordFailure(addr);
        expect(await stores.cooldown.check(addr)).toBe(900);
        expect(await stores.cooldown.check(other)).toBe(0);
      });

      it('counts concurrent failures exactly', async () => {
        await Promise.all(Array.from({ length: 5 }, () => stores.cooldown.recordFailure(addr)));
        expect(await stores.cooldown.check(addr)).toBe(900);
      });

      it('answers 0 for each failure it counts, the 5th included, then the seconds left without counting', async () => {
        for (let n = 0; n < 5; n++) expect(await stores.cooldown.recordFailure(addr)).toBe(0);
        expect(await stores.cooldown.recordFailure(addr)).toBe(900);
        clock.advance(100_500);
        expect(await stores.cooldown.recordFailure(addr)).toBe(800); // 799.5 s rounds up
        // Nothing was counted during the cooldown: after it, five tries again.
        clock.advance(800_000);
        for (let n = 0; n < 4; n++) expect(await stores.cooldown.recordFailure(addr)).toBe(0);
        expect(await stores.cooldown.check(addr)).toBe(0);
      });

      it('counts and checks in one step: of 12 concurrent failures exactly five are counted', async () => {
        const answers = await Promise.all(Array.from({ length: 12 }, () => stores.cooldown.recordFailure(addr)));
        expect(answers.filter((s) => s === 0)).toHaveLength(5);
        expect(answers.filter((s) => s === 900)).toHaveLength(7);
      });

      it('counts an IPv6 client per /64, however the address is spelled', async () => {
        for (let n = 1; n <= 5; n++) await stores.cooldown.recordFailure(`2001:db8:1:2::${n}`);
        for (const same of [
          '2001:db8:1:2::ffff',
          '2001:DB8:1:2:aaaa:bbbb:cccc:dddd',
          '2001:0db8:0001:0002:0000:0000:0000:0014',
        ]) {
          expect(await stores.cooldown.check(same)).toBe(900);
        }
        expect(await stores.preflight('2001:db8:1:2::99', null)).toEqual({ cooldown: 900, version: null });
        expect(await stores.cooldown.check('2001:db8:1:3::1')).toBe(0);
        expect(await stores.gate({ ip: '2001:db8:1:2:1::1', orgId: 9, version: 0, peek: [] })).toEqual({
          kind: 'cooldown',
          seconds: 900,
        });
      });

      it('counts an IPv4-mapped IPv6 spelling as the IPv4 address', async () => {
        for (let n = 0; n < 4; n++) await stores.cooldown.recordFailure('192.0.2.99');
        expect(await stores.cooldown.recordFailure('::ffff:192.0.2.99')).toBe(0);
        expect(await stores.cooldown.check('192.0.2.99')).toBe(900);
      });
    });

    describe('access versions', () => {
      it('start at 0 and bump by one per organization', async () => {
        expect(await stores.versions.get(42)).toBe(0);
        expect(await stores.versions.bump(42)).toBe(1);
        expect(await stores.versions.bump(42)).toBe(2);
        expect(await stores.versions.get(42)).toBe(2);
        expect(await stores.versions.get(43)).toBe(0);
        const bumps = await Promise.all(Array.from({ length: 50 }, () => stores.versions.bump(43)));
        expect(new Set(bumps).size).toBe(50);
        expect(await stores.versions.get(43)).toBe(50);
      });
    });

    describe('gate', () => {
      const req = (version: number, over: Partial<{ ip: string; limit: number }> = {}) => ({
        ip: over.ip ?? '203.0.113.7',
        orgId: 77,
        version,
        spend: [key(over.limit ?? 20), ip(100, over.ip ?? '203.0.113.7')] as [CounterRef, CounterRef],
      });

      it('spends both counters when the cooldown is clear and the version matches', async () => {
        const g = await stores.gate(req(0));
        expect(g).toEqual({
          kind: 'spent',
          hit: {
            allowed: true,
            key: { limit: 20, used: 1, remaining: 19, reset: MINUTE / 1000 + 60 },
            ip: { limit: 100, used: 1, remaining: 99, reset: MINUTE / 1000 + 60 },
          },
        });
        // The counters the gate spent are the ones every other path reads (the same key names).
        expect((await stores.limiter.spend([key(), ip()], 0)).map((s) => s.used)).toEqual([1, 1]);
        // An IPv6 client: its counter and its cooldown are found the same way.
        const v6 = '2001:db8::7';
        expect(await stores.gate(req(0, { ip: v6 }))).toMatchObject({ kind: 'spent', hit: { ip: { used: 1 } } });
        expect((await stores.limiter.spend([ip(100, v6)], 0))[0].used).toBe(1);
        for (let n = 0; n < 5; n++) await stores.cooldown.recordFailure(v6);
        expect(await stores.gate(req(0, { ip: v6 }))).toEqual({ kind: 'cooldown', seconds: 900 });
      });

      it('spends nothing for a stale version or a cooling-down address', async () => {
        await stores.versions.bump(77);
        expect(await stores.gate(req(0))).toEqual({ kind: 'stale' });
        for (let n = 0; n < 5; n++) await stores.cooldown.recordFailure('192.0.2.50');
        expect(await stores.gate(req(1, { ip: '192.0.2.50' }))).toEqual({ kind: 'cooldown', seconds: 900 });
        const [k, i] = await stores.limiter.spend([key(), ip(100, '192.0.2.50')], 0);
        expect([k.used, i.used]).toEqual([0, 0]);
      });

      it('peeks without spending', async () => {
        await spendPair(stores.limiter, key(), ip());
        const g = await stores.gate({ ip: '203.0.113.7', orgId: 77, version: 0, peek: [ip(), key()] });
        expect(g).toMatchObject({ kind: 'peeked', states: [{ used: 1 }, { used: 1 }] });
        expect((await stores.limiter.spend([key()], 0))[0].used).toBe(1);
      });

      it('decides concurrent calls one by one: exactly the limit is allowed, stale and cooling ones spend nothing', async () => {
        for (let n = 0; n < 5; n++) await stores.cooldown.recordFailure('192.0.2.60');
        await stores.versions.bump(77);
        const calls = [
          ...Array.from({ length: 30 }, () => stores.gate(req(1))),
          stores.gate(req(0)),
          stores.gate(req(1, { ip: '192.0.2.60' })),
        ];
        const out = await Promise.all(calls);
        const spent = out.slice(0, 30).map((g) => (g.kind === 'spent' ? g.hit : null));
        expect(spent.filter((h) => h?.allowed)).toHaveLength(20);
        expect(spent.map((h) => h!.key.used).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 30 }, (_, n) => n + 1),
        );
        expect(out[30]).toEqual({ kind: 'stale' });
        expect(out[31]).toMatchObject({ kind: 'cooldown' });
        expect((await stores.limiter.spend([key()], 0))[0].used).toBe(30);
      });
    });

    describe('preflight', () => {
      it('returns the cooldown and the version together', async () => {
        expect(await stores.preflight('192.0.2.20', 7)).toEqual({ cooldown: 0, version: 0 });
        expect(await stores.preflight('192.0.2.20', null)).toEqual({ cooldown: 0, version: null });
        await stores.versions.bump(7);
        for (let n = 0; n < 5; n++) await stores.cooldown.recordFailure('192.0.2.20');
        clock.advance(60_000);
        expect(await stores.preflight('192.0.2.20', 7)).toEqual({ cooldown: 840, version: 1 });
        expect(await stores.preflight('192.0.2.20', null)).toEqual({ cooldown: 840, version: null });
        expect(await stores.preflight('192.0.2.21', 7)).toEqual({ cooldown: 0, version: 1 });
      });
    });

    it('is ready', async () => {
      expect(await stores.ready()).toBe(true);
    });
  });
}

storeSuite('memory', (clock) => createMemoryStores({ clock }));

storeSuite('memory behind the breaker', (clock) => behindBreaker(clock, createMemoryStores({ clock })));

describe('memory store housekeeping', () => {
  it('sweeps entries whose window is over once enough accumulate', async () => {
    const clock = fakeClock(T0);
    const stores = createMemoryStores({ clock, sweepThreshold: 11, sweepIntervalMs: 0 });
    const ipRef = { id: 'ip:a', limit: 5 };
    for (let n = 0; n < 9; n++) await spendPair(stores.limiter, { id: `k:${n}:read`, limit: 5 }, ipRef);
    await stores.cooldown.recordFailure('192.0.2.40');
    expect(stores.entries()).toBe(11);
    clock.advance(60_000);
    // This hit finds 11 entries, sweeps the ten counters of the last window, then adds two.
    await spendPair(stores.limiter, { id: 'k:100:read', limit: 5 }, { id: 'ip:b', limit: 5 });
    expect(stores.entries()).toBe(3);
    // The failure window (15 min) outlives a rate-limit window; once it is over it goes too. The 8th
    // hit finds 11 entries again and sweeps the failure and last window's two counters.
    clock.advance(15 * 60_000);
    for (let n = 0; n < 8; n++) await spendPair(stores.limiter, { id: `k:${n}:write`, limit: 5 }, ipRef);
    expect(stores.entries()).toBe(9);
    await stores.close();
  });

  it('sweeps on a timer that does not keep the process alive', async () => {
    const clock = fakeClock(T0);
    const stores = createMemoryStores({ clock, sweepIntervalMs: 5 });
    await spendPair(stores.limiter, { id: 'k:1:read', limit: 5 }, { id: 'ip:a', limit: 5 });
    await stores.cooldown.recordFailure('192.0.2.41');
    expect(stores.entries()).toBe(3);
    clock.advance(15 * 60_000);
    // Waits for the real timer (a few ms), not for the window: the window is moved by the clock.
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(stores.entries()).toBe(0);
    await stores.close();
  });
});

const REDIS_URL = process.env.REDIS_URL;

describe.runIf(REDIS_URL !== undefined)('redis', () => {
  // A random prefix per run isolates this file from other runs and files sharing the Redis.
  const prefix = `kgtest:${randomBytes(6).toString('hex')}:`;
  const admin = REDIS_URL !== undefined ? new Redis(REDIS_URL) : undefined;

  afterAll(async () => {
    if (admin === undefined) return;
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    await admin.quit();
  });

  // Each test gets its own sub-prefix, so state never leaks between tests that reuse ids.
  let seq = 0;
  storeSuite('redis', (clock) =>
    createRedisStores({ redis: createRedisClient({ url: REDIS_URL }), prefix: `${prefix}${seq++}:`, clock }),
  );
  storeSuite('redis behind the breaker, memory as the fallback', (clock) => {
    const redis = createRedisClient({ url: REDIS_URL });
    return behindBreaker(clock, createRedisStores({ redis, prefix: `${prefix}${seq++}:`, clock }), redis);
  });

  it('names every key with a hash tag and gives it a TTL', async () => {
    const clock = fakeClock(T0);
    const p = `${prefix}keys:`;
    const stores = createRedisStores({ redis: createRedisClient({ url: REDIS_URL }), prefix: p, clock });
    try {
      await spendPair(stores.limiter, { id: 'k:1000:read', limit: 20 }, { id: 'ip:203.0.113.7', limit: 100 });
      for (let n = 0; n < 4; n++) await stores.cooldown.recordFailure('192.0.2.30');
      for (let n = 0; n < 5; n++) await stores.cooldown.recordFailure('192.0.2.31');
      await stores.versions.bump(42);

      const keys = (await admin!.keys(`${p}*`)).sort();
      expect(keys).toEqual(
        [
          `${p}af:{192.0.2.30}:failures`,
          `${p}af:{192.0.2.31}:cooldown`,
          `${p}af:{cooldowns}:latest`,
          `${p}av:{42}`,
          `${p}rl:{ip:203.0.113.7}:${MINUTE}`,
          `${p}rl:{k:1000:read}:${MINUTE}`,
        ].sort(),
      );
      for (const k of keys) expect(k).toMatch(/^[^{}]*\{[^{}]+\}[^{}]*$/);

      // Counters live until the window ends plus a few seconds of slack, taken from the clock.
      const windowLeft = MINUTE + 60_000 - T0;
      for (const k of keys.filter((k) => k.includes(':rl:'))) {
        const ttl = await admin!.pttl(k);
        expect(ttl).toBeGreaterThan(windowLeft);
        expect(ttl).toBeLessThanOrEqual(windowLeft + 5_000);
      }
      for (const k of keys.filter((k) => k.includes(':af:'))) {
        const ttl = await admin!.pttl(k);
        expect(ttl).toBeGreaterThan(14 * 60_000);
        expect(ttl).toBeLessThanOrEqual(15 * 60_000);
      }
      // The access version must never expire: losing it would make stale cached principals current.
      expect(await admin!.pttl(`${p}av:{42}`)).toBe(-1);
      // The cooldown's value is its end in clock milliseconds, so any instance can compute seconds left.
      expect(await admin!.get(`${p}af:{192.0.2.31}:cooldown`)).toBe(String(T0 + 15 * 60_000));
    } finally {
      await stores.close();
    }
  });

  it('sends the gate calls of one event-loop turn together, 16 per script, and fails a batch together', async () => {
    const redis = createRedisClient({ url: REDIS_URL });
    const sent: string[] = [];
    const original = redis.sendCommand.bind(redis);
    (redis as unknown as { sendCommand: typeof original }).sendCommand = ((cmd: Parameters<typeof original>[0]) => {
      sent.push(cmd.name);
      return original(cmd);
    }) as typeof original;
    const stores = createRedisStores({ redis, prefix: `${prefix}batch:`, clock: fakeClock(T0) });
    try {
      await redis.ping();
      sent.length = 0;
      const out = await Promise.all(
        Array.from({ length: 50 }, (_, n) =>
          stores.gate({
            ip: `198.51.100.${n % 5}`,
            orgId: 5,
            version: 0,
            spend: [
              { id: `k:${n % 3}:read`, limit: 20 },
              { id: `ip:198.51.100.${n % 5}`, limit: 100 },
            ],
          }),
        ),
      );
      // 50 calls: three full batches sent as they filled, the rest when the turn's I/O was done.
      expect(sent.filter((c) => c === 'evalsha' || c === 'eval')).toHaveLength(4);
      expect(out.every((g) => g.kind === 'spent' && g.hit.allowed)).toBe(true);
      // Each request saw the counts of the ones before it in the batch: 17 + 17 + 16 hits on the keys.
      const used = out.map((g) => (g.kind === 'spent' ? g.hit.key.used : 0));
      expect(Math.max(...used.filter((_, n) => n % 3 === 0))).toBe(17);
      expect(Math.max(...used.filter((_, n) => n % 3 === 2))).toBe(16);

      // A batch that fails rejects every call in it, and the next turn's batch is independent.
      redis.disconnect();
      const failed = await Promise.allSettled(
        [0, 1, 2].map(() =>
          stores.gate({ ip: '198.51.100.9', orgId: 5, version: 0, peek: [{ id: 'ip:198.51.100.9', limit: 100 }] }),
        ),
      );
      expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    } finally {
      await stores.close();
    }
  });

  describe('the latest cooldown end', () => {
    const spendFrom = (address: string) => ({
      ip: address,
      orgId: 5,
      version: 0,
      spend: [
        { id: 'k:1:read', limit: 1000 },
        { id: `ip:${address}`, limit: 100 },
      ] as [CounterRef, CounterRef],
    });

    it("reads no address's cooldown while none runs, and every one while one does", async () => {
      const p = `${prefix}latest-reads:`;
      const stores = createRedisStores({
        redis: createRedisClient({ url: REDIS_URL }),
        prefix: p,
        clock: fakeClock(T0),
      });
      const monitor = await admin!.monitor();
      const reads: string[] = [];
      let seenEnd: () => void = () => {};
      const end = new Promise<void>((resolve) => (seenEnd = resolve));
      // MONITOR shows the commands a script runs too; only this test's keys are counted.
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args[0]?.toLowerCase() !== 'get') return;
        if (args[1] === `${p}end`) seenEnd();
        else if (args[1]?.startsWith(`${p}af:{`)) reads.push(args[1]);
      });
      try {
        const batch = () => Promise.all(Array.from({ length: 8 }, (_, n) => stores.gate(spendFrom(`198.51.100.${n}`))));
        expect((await batch()).every((g) => g.kind === 'spent')).toBe(true);
        for (let n = 0; n < 5; n++) await stores.cooldown.recordFailure('198.51.100.3');
        const cooling = await batch();
        expect(cooling[3]).toEqual({ kind: 'cooldown', seconds: 900 });
        expect(cooling.filter((g) => g.kind === 'spent')).toHaveLength(7);
        // MONITOR's lines arrive in order: once this GET's line is in, every earlier one is.
        await admin!.get(`${p}end`);
        await end;
        const perAddress = reads.filter((k) => k.endsWith(':cooldown'));
        // The first batch read only the latest end; the second, it and each of its 8 addresses' cooldowns.
        expect(perAddress.filter((k) => !k.includes('{198.51.100.3}'))).toHaveLength(7);
        expect(reads.filter((k) => k === `${p}af:{cooldowns}:latest`).length).toBeGreaterThanOrEqual(2);
        expect(perAddress.filter((k) => k.includes('{198.51.100.3}'))).toHaveLength(
          // the failure script's own read of it (each of 5 failures) and the gate's
          6,
        );
      } finally {
        monitor.disconnect();
        await stores.close();
      }
    });

    it('keeps the latest end of all: an earlier cooldown ending does not end a later one, whatever the clocks', async () => {
      const p = `${prefix}latest-ends:`;
      const ahead = fakeClock(T0 + 10 * 60_000);
      const behind = fakeClock(T0);
      const a = createRedisStores({ redis: createRedisClient({ url: REDIS_URL }), prefix: p, clock: ahead });
      const b = createRedisStores({ redis: createRedisClient({ url: REDIS_URL }), prefix: p, clock: behind });
      try {
        // An instance whose clock is 10 minutes ahead cools one address down until T0 + 25 min; one
        // behind cools another until T0 + 15 min, which must not lower what the first set.
        for (let n = 0; n < 5; n++) await a.cooldown.recordFailure('198.51.100.40');
        for (let n = 0; n < 5; n++) await b.cooldown.recordFailure('198.51.100.41');
        expect(await admin!.get(`${p}af:{cooldowns}:latest`)).toBe(String(T0 + 25 * 60_000));
        behind.set(T0 + 16 * 60_000);
        expect(await b.gate(spendFrom('198.51.100.41'))).toMatchObject({ kind: 'spent' });
        expect(await b.gate(spendFrom('198.51.100.40'))).toEqual({ kind: 'cooldown', seconds: 540 });
        behind.set(T0 + 25 * 60_000);
        expect(await b.gate(spendFrom('198.51.100.40'))).toMatchObject({ kind: 'spent' });
        // The key lives as long as the cooldowns it stands for, no longer.
        expect(await admin!.pttl(`${p}af:{cooldowns}:latest`)).toBeGreaterThan(14 * 60_000);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });

  it('fails a gate call whose reply is missing from its batch instead of leaving it waiting', async () => {
    const redis = createRedisClient({ url: REDIS_URL });
    const stores = createRedisStores({ redis, prefix: `${prefix}short:`, clock: fakeClock(T0) });
    // A script reply one entry short (what a broken proxy in front of Redis could return).
    (redis as unknown as { keygateGate: () => Promise<string> }).keygateGate = async () => 's 1 1';
    try {
      const calls = [0, 1].map(() =>
        stores.gate({
          ip: '198.51.100.20',
          orgId: 5,
          version: 0,
          spend: [
            { id: 'k:1:read', limit: 20 },
            { id: 'ip:198.51.100.20', limit: 100 },
          ],
        }),
      );
      const [first, second] = await Promise.allSettled(calls);
      expect(first).toMatchObject({ status: 'fulfilled', value: { kind: 'spent' } });
      expect(second.status).toBe('rejected');
    } finally {
      await stores.close();
    }
  });

  it('is not ready when Redis does not answer, and answers fast', async () => {
    const redis = createRedisClient({ url: 'redis://127.0.0.1:1' });
    redis.on('error', () => {}); // the refused connection is the point of this test
    const stores = createRedisStores({ redis, prefix, readyTimeoutMs: 200 });
    const started = performance.now();
    expect(await stores.ready()).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
    await stores.close();
  });

  it('rejects a prefix with braces', () => {
    const redis = createRedisClient({ url: REDIS_URL });
    expect(() => createRedisStores({ redis, prefix: 'kg:{x}:' })).toThrow(/must not contain/);
    redis.disconnect();
  });

  it('rejects a prefix with whitespace (the gate packs its keys one per line)', () => {
    const redis = createRedisClient({ url: REDIS_URL });
    expect(() => createRedisStores({ redis, prefix: 'kg:\nx:' })).toThrow(/whitespace/);
    redis.disconnect();
  });

  it('fails the calls of a batch whose reply line is not one the script writes', async () => {
    const redis = createRedisClient({ url: REDIS_URL });
    const stores = createRedisStores({ redis, prefix: `${prefix}garbled:`, clock: fakeClock(T0) });
    (redis as unknown as { keygateGate: () => Promise<string> }).keygateGate = async () => 's 1\nx 2 2';
    try {
      const calls = [0, 1].map(() =>
        stores.gate({
          ip: '198.51.100.21',
          orgId: 5,
          version: 0,
          spend: [
            { id: 'k:1:read', limit: 20 },
            { id: 'ip:198.51.100.21', limit: 100 },
          ],
        }),
      );
      const [first, second] = await Promise.allSettled(calls);
      expect(first.status).toBe('rejected'); // one count where two were asked
      expect(second.status).toBe('rejected'); // an unknown kind
    } finally {
      await stores.close();
    }
  });
});

// The `cluster` project (vitest.config.ts) provides a three-primary Redis Cluster; the main project
// does not, so this block only runs there.
const CLUSTER = inject('redisClusterNodes');

describe.runIf(Boolean(CLUSTER))('redis cluster', () => {
  const nodes = CLUSTER ? CLUSTER.split(',') : [];
  const prefix = `kgcl:${randomBytes(6).toString('hex')}:`;
  let seq = 0;
  storeSuite('redis cluster', (clock) =>
    createRedisStores({
      redis: createRedisClient({ clusterNodes: nodes, commandTimeoutMs: 2000 }),
      prefix: `${prefix}${seq++}:`,
      clock,
    }),
  );
  storeSuite('redis cluster split by node, a breaker per primary', (clock) =>
    behindBreaker(
      clock,
      createRedisStores({
        redis: createRedisClient({ clusterNodes: nodes, commandTimeoutMs: 2000 }),
        prefix: `${prefix}${seq++}:`,
        clock,
      }),
    ),
  );

  it("spreads one request's counters over several slots, each script touching one", async () => {
    const admin = createRedisClient({ clusterNodes: nodes, commandTimeoutMs: 2000 }) as Cluster;
    const clock = fakeClock(T0);
    const p = `${prefix}slots:`;
    const stores = createRedisStores({
      redis: createRedisClient({ clusterNodes: nodes, commandTimeoutMs: 2000 }),
      prefix: p,
      clock,
    });
    try {
      // Many keys and IPs land on all three primaries; every hit still answers (no CROSSSLOT).
      for (let i = 0; i < 30; i++) {
        const r = await spendPair(
          stores.limiter,
          { id: `k:${i}:read`, limit: 20 },
          { id: `ip:198.51.100.${i}`, limit: 100 },
        );
        expect(r.allowed).toBe(true);
      }
      const slot = (k: string) => admin.cluster('KEYSLOT', k) as Promise<number>;
      expect(await slot(`${p}af:{192.0.2.1}:failures`)).toBe(await slot(`${p}af:{192.0.2.1}:cooldown`));
      const slots = new Set(
        await Promise.all(Array.from({ length: 30 }, (_, i) => slot(`${p}rl:{k:${i}:read}:${MINUTE}`))),
      );
      expect(slots.size).toBeGreaterThan(1);
      let found = 0;
      for (const node of admin.nodes('master')) found += (await node.keys(`${p}rl:*`)).length;
      expect(found).toBe(60);
      const masters = await Promise.all(admin.nodes('master').map(async (n) => (await n.keys(`${p}*`)).length));
      expect(masters.filter((n) => n > 0).length).toBeGreaterThan(1);
    } finally {
      await stores.close();
      await admin.quit();
    }
  });
});

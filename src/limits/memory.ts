// In-process stores for a single gateway instance (and for tests). Node runs this code on one thread,
// so each synchronous read-modify-write below is atomic: no two hits can interleave inside one.
// Counters across several instances must use ./redis.ts instead (docs/decisions.md section 3).

import { addressKey } from './address.js';
import {
  COOLDOWN_MS,
  FAILURE_LIMIT,
  FAILURE_WINDOW_MS,
  WINDOW_MS,
  windowStart,
  hitOf,
  layerState,
  monthStart,
  monthState,
  type CounterRef,
  type CountHandover,
  type CountTaken,
  type LayerState,
  type SharedStores,
} from './types.js';
import { systemClock, type Clock } from '../ops/clock.js';

export interface MemoryStoreOptions {
  clock?: Clock;
  /** Real-time period of the background sweep of expired entries; 0 turns it off. Default one window. */
  sweepIntervalMs?: number;
  /** Entry count that triggers a sweep on write, so a burst of distinct ids cannot grow memory unbounded. */
  sweepThreshold?: number;
}

interface Counter {
  windowStart: number;
  used: number;
}

interface Failures {
  count: number;
  /** End of the 15-minute failure window, which starts at the first failure. */
  until: number;
}

/** The memory stores, plus how many entries they hold (for metrics, and to test that sweeping works). */
export interface MemoryStores extends SharedStores, CountHandover {
  entries(): number;
}

const DEFAULT_SWEEP_THRESHOLD = 10_000;

export function createMemoryStores(opts: MemoryStoreOptions = {}): MemoryStores {
  const clock = opts.clock ?? systemClock;
  const sweepThreshold = opts.sweepThreshold ?? DEFAULT_SWEEP_THRESHOLD;

  const counters = new Map<string, Counter>();
  // Monthly quotas, one per organization with a quota; windowStart is the month's start.
  const months = new Map<string, Counter>();
  // Both keyed by addressKey(ip): the IPv4 address, or the /64 of an IPv6 one.
  const failures = new Map<string, Failures>();
  /** Address -> end of its cooldown, in clock milliseconds. */
  const cooldowns = new Map<string, number>();
  // Versions are never swept: there is one per organization, and dropping one would reset it to 0,
  // which could make a stale cached principal look current again.
  const versions = new Map<number, number>();

  // Grows with the live set so a sweep that frees little is not repeated on every write (amortized O(1)).
  let nextSweepAt = sweepThreshold;

  const entries = () => counters.size + months.size + failures.size + cooldowns.size;

  function sweep(): void {
    const now = clock.now();
    const current = windowStart(now);
    for (const [id, c] of counters) if (c.windowStart !== current) counters.delete(id);
    const month = monthStart(now);
    for (const [id, c] of months) if (c.windowStart !== month) months.delete(id);
    for (const [ip, f] of failures) if (f.until <= now) failures.delete(ip);
    for (const [ip, end] of cooldowns) if (end <= now) cooldowns.delete(ip);
    nextSweepAt = Math.max(sweepThreshold, entries() * 2);
  }

  function maybeSweep(): void {
    if (entries() >= nextSweepAt) sweep();
  }

  const intervalMs = opts.sweepIntervalMs ?? WINDOW_MS;
  const timer = intervalMs > 0 ? setInterval(sweep, intervalMs) : undefined;
  // The sweep only frees memory; it must never keep the process (or a test run) alive.
  timer?.unref();

  /** Spend one token; an entry from an earlier window is over, so it is replaced when touched. */
  function spend(ref: CounterRef, start: number): LayerState {
    let c = counters.get(ref.id);
    if (c === undefined || c.windowStart !== start) {
      c = { windowStart: start, used: 0 };
      counters.set(ref.id, c);
    }
    c.used += 1;
    return layerState(ref.limit, c.used, start);
  }

  function read(ref: CounterRef, start: number): LayerState {
    const c = counters.get(ref.id);
    return layerState(ref.limit, c !== undefined && c.windowStart === start ? c.used : 0, start);
  }

  function cooldownLeft(ip: string, now: number): number {
    const address = addressKey(ip);
    const end = cooldowns.get(address);
    if (end === undefined) return 0;
    if (end <= now) {
      cooldowns.delete(address);
      return 0;
    }
    return Math.ceil((end - now) / 1000);
  }

  /** The month counter's count; when spending, counted only if it stays within its limit. */
  function spendMonth(ref: CounterRef, now: number, spend: boolean): LayerState {
    const start = monthStart(now);
    let c = months.get(ref.id);
    if (c === undefined || c.windowStart !== start) {
      if (!spend) return monthState(ref.limit, 0, now);
      c = { windowStart: start, used: 0 };
      months.set(ref.id, c);
    }
    if (!spend) return monthState(ref.limit, c.used, now);
    // Over the quota: refused, and not counted (the counter holds exactly the admitted requests).
    if (c.used >= ref.limit) return monthState(ref.limit, c.used + 1, now);
    c.used += 1;
    return monthState(ref.limit, c.used, now);
  }

  function spendAll(refs: CounterRef[], cost: 0 | 1, at?: number): LayerState[] {
    // One clock reading for every layer, so they can never land in different windows.
    const now = at ?? clock.now();
    const start = windowStart(now);
    const month = refs.length > 0 && refs[refs.length - 1].month ? refs[refs.length - 1] : undefined;
    const minute = month ? refs.slice(0, -1) : refs;
    if (cost === 0) {
      const states = minute.map((ref) => read(ref, start));
      if (month) states.push(spendMonth(month, now, false));
      return states;
    }
    maybeSweep();
    const states = minute.map((ref) => spend(ref, start));
    // The month is spent only by a request every per-minute layer admits.
    if (month)
      states.push(
        spendMonth(
          month,
          now,
          states.every((st) => st.used <= st.limit),
        ),
      );
    return states;
  }

  return {
    async gate(req) {
      const now = clock.now();
      const seconds = cooldownLeft(req.ip, now);
      if (seconds > 0) return { kind: 'cooldown', seconds };
      if ((versions.get(req.orgId) ?? 0) !== req.version) return { kind: 'stale' };
      if (req.spend)
        return { kind: 'spent', hit: hitOf(...(spendAll(req.spend, 1) as [LayerState, LayerState, LayerState?])) };
      return { kind: 'peeked', states: spendAll(req.peek ?? [], 0) };
    },
    limiter: {
      async spend(refs, cost, at) {
        return spendAll(refs, cost, at);
      },
    },

    cooldown: {
      async check(ip) {
        return cooldownLeft(ip, clock.now());
      },
      // Checked and counted in one synchronous step, as the Redis script does (docs/decisions.md section 3):
      // a failure that meets a running cooldown answers its seconds left and is not counted.
      async recordFailure(ip) {
        const now = clock.now();
        const running = cooldownLeft(ip, now);
        if (running > 0) return running;
        maybeSweep();
        const address = addressKey(ip);
        let f = failures.get(address);
        if (f === undefined || f.until <= now) {
          f = { count: 0, until: now + FAILURE_WINDOW_MS };
          failures.set(address, f);
        }
        f.count += 1;
        if (f.count >= FAILURE_LIMIT) {
          cooldowns.set(address, now + COOLDOWN_MS);
          // The cooldown replaces the count: after it ends, the address starts again from zero failures.
          failures.delete(address);
        }
        return 0;
      },
    },

    versions: {
      async get(orgId) {
        return versions.get(orgId) ?? 0;
      },
      async bump(orgId) {
        const v = (versions.get(orgId) ?? 0) + 1;
        versions.set(orgId, v);
        return v;
      },
    },

    async preflight(ip, orgId) {
      return {
        cooldown: cooldownLeft(ip, clock.now()),
        version: orgId === null ? null : (versions.get(orgId) ?? 0),
      };
    },

    async ready() {
      return true;
    },

    entries,

    takeCounts(which) {
      const now = clock.now();
      const taken: CountTaken[] = [];
      const take = (from: Map<string, Counter>, current: number, month: boolean) => {
        for (const [id, c] of from) {
          if (which !== undefined && !which(id)) continue;
          from.delete(id);
          if (c.windowStart !== current || c.used === 0) continue;
          taken.push(month ? { id, windowStart: c.windowStart, used: c.used, month } : { id, ...c });
        }
      };
      take(counters, windowStart(now), false);
      take(months, monthStart(now), true);
      return taken;
    },

    async addCounts(counts) {
      const now = clock.now();
      for (const { id, windowStart: start, used, month } of counts) {
        const into = month ? months : counters;
        if (start !== (month ? monthStart(now) : windowStart(now))) continue;
        const c = into.get(id);
        if (c !== undefined && c.windowStart === start) c.used += used;
        else into.set(id, { windowStart: start, used });
      }
    },

    async close() {
      if (timer !== undefined) clearInterval(timer);
    },
  };
}

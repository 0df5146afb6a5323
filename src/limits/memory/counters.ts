// The rate-limit counters in this process's memory: each counter's count in its fixed window, and the
// monthly quotas' counts in their calendar month. Node runs this code on one thread, so each synchronous
// read-modify-write below is atomic: no two hits can interleave inside one.
import {
  layerState,
  monthStart,
  monthState,
  windowStart,
  type CounterRef,
  type CountHandover,
  type CountTaken,
  type LayerState,
} from '../types.js';
import type { Clock } from '../../ops/clock.js';

interface Counter {
  windowStart: number;
  used: number;
}

export interface MemoryCounters extends CountHandover {
  /** RateLimiter.spend, synchronously. */
  spendAll(refs: CounterRef[], cost: 0 | 1, at?: number): LayerState[];
  size(): number;
  /** Drops the counters of windows and months that are over. */
  sweep(now: number): void;
}

/** `beforeSpend` runs before each spend (the stores' sweep on write). */
export function createMemoryCounters(clock: Clock, beforeSpend: () => void): MemoryCounters {
  const counters = new Map<string, Counter>();
  // Monthly quotas, one per organization with a quota; windowStart is the month's start.
  const months = new Map<string, Counter>();

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

  return {
    spendAll(refs, cost, at) {
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
      beforeSpend();
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
    },

    size: () => counters.size + months.size,

    sweep(now) {
      const current = windowStart(now);
      for (const [id, c] of counters) if (c.windowStart !== current) counters.delete(id);
      const month = monthStart(now);
      for (const [id, c] of months) if (c.windowStart !== month) months.delete(id);
    },

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
  };
}

// Bounded while Redis is away (RATE_LIMIT_FAILURE_MODE=open). Each instance falling back to the whole
// budget would let N instances admit N budgets; so each keeps
//   - how many gateway instances are live: every instance adds itself to a set in Redis once a second
//     while Redis answers (a member counts while its last beat is under FLEET_TTL_MS old), and
//     remembers the last size it read when Redis stops answering;
//   - the count it last saw of each counter in the current window (from Redis's own replies);
// and without Redis it admits, per counter, its share of what was left when it last looked:
//   allowance = ceil((limit - last seen) / live instances), at least 1 while anything was left, 0 when
//   the counter was spent already.
// The fleet then admits about one budget in the window of the outage: the counts seen differ a little
// from instance to instance, and each share is rounded up, so at most one extra per instance. What the
// fallback counts reaches Redis only when it answers again (./resilient/handover.ts hands it over): a Redis
// that comes back empty within the window counts from those hand-overs alone, so a window that spans
// such a recovery can admit up to one more budget.
// A monthly quota's counter is one more counter with its share, in its month: its counts are kept
// apart from the minute's (one per organization with a quota), so seeing a month never passes for
// seeing a later minute. The in-memory limiter is handed each counter's allowance as its limit, so the
// month is spent there only by a request every minute's share admits, and only within its own share.
import { WINDOW_MS, monthEnd, windowStart, type CounterRef, type LayerState, type RateLimiter } from './types.js';
import { systemClock, type Clock } from '../ops/clock.js';

/** A beat older than this no longer counts its instance as live (a few missed beats are not a departure). */
export const FLEET_TTL_MS = 5_000;

/** Counters remembered per window at most: beyond it, a counter falls back as if unseen (its share of the whole budget). */
const MAX_SEEN = 100_000;

/** The live set in Redis (./redis/index.ts). */
export interface FleetRegistry {
  /** Marks `id` live now (Redis's clock), forgets members silent for `ttlMs`, returns how many are live. */
  beat(id: string, ttlMs: number): Promise<number>;
  leave(id: string): Promise<void>;
}

export interface FleetShare {
  /** Instances live when Redis last answered a beat (1 before the first). */
  live(): number;
  /** Sets the live count (from a beat). */
  setLive(n: number): void;
  /** Records the states Redis answered for these counters. */
  saw(refs: readonly CounterRef[], states: readonly LayerState[]): void;
  /** The in-memory limiter wrapped so each counter starts from its share (see above). */
  limiter(inner: RateLimiter): RateLimiter;
}

/**
 * An IPv4 address counter's id (`ip:a.b.c.d`, as ../gateway/guards/rate-limit.ts names it) as one 32-bit
 * integer, or null for any other id (keys, IPv6 /64s, a spelling with leading zeros). Under load from
 * many clients most counters seen are addresses, one new each per client and window; a number is kept
 * inside the Map's own table, where a string id would be one more object per address to hash, keep and
 * promote (bench/RESULTS.md, "2026-11-27, `d10f5d5`").
 */
export function ipv4CounterId(id: string): number | null {
  // 'i', 'p', ':'
  if (
    id.length < 10 ||
    id.length > 18 ||
    id.charCodeAt(0) !== 105 ||
    id.charCodeAt(1) !== 112 ||
    id.charCodeAt(2) !== 58
  )
    return null;
  let n = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 3; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || part > 255 || dots === 3) return null;
      n = n * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (digits === 1 && part === 0) return null; // a leading zero: another spelling, kept as a string
      part = part * 10 + (c - 48);
      digits++;
    } else {
      return null;
    }
  }
  if (dots !== 3 || digits === 0 || part > 255) return null;
  // As a signed 32-bit integer: a small integer to V8, stored in the Map's table without an object.
  return (n * 256 + part) | 0;
}

/** `clock` places a fallback spend in its minute and month (the stores' clock). */
export function createFleetShare(clock: Clock = systemClock): FleetShare {
  let live = 1;
  // One window's counts (the newest seen); numbers only, so updating a known counter allocates nothing.
  // IPv4 address counters by their address as a number, every other counter by its id.
  let seenStart = 0;
  let seen = new Map<string, number>();
  let seenV4 = new Map<number, number>();
  // Monthly quotas' counts, by counter id: the month's end (its states' `reset`) and the count.
  const months = new Map<string, { reset: number; used: number }>();

  function sawMonth(id: string, state: LayerState) {
    const before = months.get(id);
    if (before === undefined) {
      if (months.size >= MAX_SEEN) return;
      months.set(id, { reset: state.reset, used: state.used });
    } else if (state.reset > before.reset || (state.reset === before.reset && state.used > before.used)) {
      before.reset = state.reset;
      before.used = state.used;
    }
  }

  function saw(refs: readonly CounterRef[], states: readonly LayerState[]) {
    for (let n = 0; n < refs.length && n < states.length; n++) {
      const state = states[n];
      if (refs[n].month) {
        sawMonth(refs[n].id, state);
        continue;
      }
      const start = state.reset * 1000 - WINDOW_MS;
      if (start > seenStart) {
        seenStart = start;
        seen = new Map();
        seenV4 = new Map();
      } else if (start < seenStart) {
        continue;
      }
      const id = refs[n].id;
      const v4 = ipv4CounterId(id);
      const before = v4 === null ? seen.get(id) : seenV4.get(v4);
      // Replies of one window may arrive out of order: the highest count is the latest.
      if (state.used <= (before ?? 0)) continue;
      if (before === undefined && seen.size + seenV4.size >= MAX_SEEN) continue;
      if (v4 === null) seen.set(id, state.used);
      else seenV4.set(v4, state.used);
    }
  }

  /** What this instance last saw counted of the counter in the minute from `start` or the month ending at `monthReset` (s). */
  function lastSeen(ref: CounterRef, start: number, monthReset: number): number {
    if (ref.month) {
      const month = months.get(ref.id);
      return month !== undefined && month.reset === monthReset ? month.used : 0;
    }
    if (start !== seenStart) return 0;
    const v4 = ipv4CounterId(ref.id);
    return (v4 === null ? seen.get(ref.id) : seenV4.get(v4)) ?? 0;
  }

  /** How far the in-memory counter starts into the budget: limit - allowance. */
  function offset(ref: CounterRef, start: number, monthReset: number): number {
    const used = lastSeen(ref, start, monthReset);
    if (used >= ref.limit) return ref.limit;
    const allowance = Math.max(1, Math.ceil((ref.limit - used) / live));
    return ref.limit - allowance;
  }

  return {
    live: () => live,
    setLive(n) {
      live = Math.max(1, n);
    },
    saw,
    limiter: (inner) => ({
      async spend(refs, cost, at) {
        const now = at ?? clock.now();
        const start = windowStart(now);
        const monthReset = monthEnd(now) / 1000;
        const offsets = refs.map((ref) => offset(ref, start, monthReset));
        // Each counter's allowance is its limit in memory: what the memory admits, the share admits.
        const shares = refs.map((ref, n) => ({ ...ref, limit: ref.limit - offsets[n] }));
        const states = await inner.spend(shares, cost, now);
        return states.map((state, n) => {
          const { limit } = refs[n];
          const used = state.used + offsets[n];
          return { limit, used, remaining: Math.max(0, limit - used), reset: state.reset };
        });
      },
    }),
  };
}

// In-process stores for a single gateway instance (and for tests): the counters (./counters.ts), the
// failed-authentication cooldown (./cooldown.ts) and the access versions, in this process's memory.
// Counters across several instances must use ../redis/ instead (docs/decisions.md section 3).
import { createMemoryCooldown } from './cooldown.js';
import { createMemoryCounters } from './counters.js';
import { WINDOW_MS, hitOf, type CountHandover, type LayerState, type SharedStores } from '../types.js';
import { systemClock, type Clock } from '../../ops/clock.js';

export interface MemoryStoreOptions {
  clock?: Clock;
  /** Real-time period of the background sweep of expired entries; 0 turns it off. Default one window. */
  sweepIntervalMs?: number;
  /** Entry count that triggers a sweep on write, so a burst of distinct ids cannot grow memory unbounded. */
  sweepThreshold?: number;
}

/** The memory stores, plus how many entries they hold (for metrics, and to test that sweeping works). */
export interface MemoryStores extends SharedStores, CountHandover {
  entries(): number;
}

const DEFAULT_SWEEP_THRESHOLD = 10_000;

export function createMemoryStores(opts: MemoryStoreOptions = {}): MemoryStores {
  const clock = opts.clock ?? systemClock;
  const sweepThreshold = opts.sweepThreshold ?? DEFAULT_SWEEP_THRESHOLD;
  const counters = createMemoryCounters(clock, maybeSweep);
  const cooldown = createMemoryCooldown(clock, maybeSweep);
  // Versions are never swept: there is one per organization, and dropping one would reset it to 0,
  // which could make a stale cached principal look current again.
  const versions = new Map<number, number>();

  // Grows with the live set so a sweep that frees little is not repeated on every write (amortized O(1)).
  let nextSweepAt = sweepThreshold;

  const entries = () => counters.size() + cooldown.size();

  function sweep(): void {
    const now = clock.now();
    counters.sweep(now);
    cooldown.sweep(now);
    nextSweepAt = Math.max(sweepThreshold, entries() * 2);
  }

  function maybeSweep(): void {
    if (entries() >= nextSweepAt) sweep();
  }

  const intervalMs = opts.sweepIntervalMs ?? WINDOW_MS;
  const timer = intervalMs > 0 ? setInterval(sweep, intervalMs) : undefined;
  // The sweep only frees memory; it must never keep the process (or a test run) alive.
  timer?.unref();

  return {
    async gate(req) {
      const now = clock.now();
      const seconds = cooldown.left(req.ip, now);
      if (seconds > 0) return { kind: 'cooldown', seconds };
      if ((versions.get(req.orgId) ?? 0) !== req.version) return { kind: 'stale' };
      if (req.spend)
        return {
          kind: 'spent',
          hit: hitOf(...(counters.spendAll(req.spend, 1) as [LayerState, LayerState, LayerState?])),
        };
      return { kind: 'peeked', states: counters.spendAll(req.peek ?? [], 0) };
    },
    limiter: {
      async spend(refs, cost, at) {
        return counters.spendAll(refs, cost, at);
      },
    },
    cooldown: { check: cooldown.check, recordFailure: cooldown.recordFailure },
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
        cooldown: cooldown.left(ip, clock.now()),
        version: orgId === null ? null : (versions.get(orgId) ?? 0),
      };
    },
    async ready() {
      return true;
    },
    entries,
    takeCounts: counters.takeCounts,
    addCounts: counters.addCounts,
    async close() {
      if (timer !== undefined) clearInterval(timer);
    },
  };
}

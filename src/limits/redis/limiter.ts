// The counters on Redis (RateLimiter): the per-minute counters in one script on a standalone Redis
// (one per counter on a Cluster, whose counters live in different slots), and a monthly quota's counter
// after them, spent only once they admitted the request.
import type { MonthFloors } from '../month-checkpoint.js';
import {
  WINDOW_MS,
  layerState,
  monthEnd,
  monthStart,
  monthState,
  windowStart,
  type CounterRef,
  type CountHandover,
  type LayerState,
  type RateLimiter,
} from '../types.js';
import type { Clock } from '../../ops/clock.js';
import type { RedisConnection } from './client.js';
import { MONTH_TTL_SLACK_MS } from './gate.js';
import { TTL_SLACK_MS, type ScriptCommands } from './scripts.js';

export function createRedisLimiter(o: {
  redis: RedisConnection;
  scripts: ScriptCommands;
  clock: Clock;
  counterKey(id: string, start: number): string;
  /** GET several keys in one round trip where the store allows it. */
  getMany(keys: string[]): Promise<(string | null)[]>;
  /** The months' checkpoint (../month-checkpoint.ts). */
  floors?: MonthFloors;
}): RateLimiter {
  const { redis, scripts, clock, counterKey, getMany, floors } = o;
  const cluster = redis.isCluster;
  return {
    async spend(all: CounterRef[], cost: 0 | 1, at?: number): Promise<LayerState[]> {
      if (all.length === 0) return [];
      // One clock reading for every layer, so they can never land in different windows.
      const now = at ?? clock.now();
      const start = windowStart(now);
      // A monthly quota's counter (last, see CounterRef) is spent after the others admitted the request.
      const month = all[all.length - 1].month ? all[all.length - 1] : undefined;
      const monthMs = month ? monthStart(now) : 0;
      const monthKey = month ? counterKey(month.id, monthMs) : '';
      // A month's count shows at least its floor (what the checkpoint or this instance knows).
      const atLeastFloor = (n: number) => (month && floors ? Math.max(n, floors.floor(month.id, monthMs) ?? 0) : n);
      if (month && cost === 0) {
        const counts = await getMany([...all.slice(0, -1).map((ref) => counterKey(ref.id, start)), monthKey]);
        return all.map((ref, n) =>
          ref.month
            ? monthState(ref.limit, atLeastFloor(Number(counts[n] ?? 0)), now)
            : layerState(ref.limit, Number(counts[n] ?? 0), start),
        );
      }
      const refs = month ? all.slice(0, -1) : all;
      const keys = refs.map((ref) => counterKey(ref.id, start));
      let counts: (number | string | null)[];
      if (cost === 0) {
        counts = await getMany(keys);
      } else {
        const ttl = start + WINDOW_MS - now + TTL_SLACK_MS;
        // On a Cluster the counters have different hash tags, so different slots: one single-key
        // script each, sent concurrently. On a standalone Redis, one script for all.
        counts = cluster
          ? (await Promise.all(keys.map((key) => scripts.keygateLimitHit(1, key, ttl)))).map(([used]) => used)
          : await scripts.keygateLimitHit(keys.length, ...keys, ttl);
      }
      const states = refs.map((ref, n) => layerState(ref.limit, Number(counts[n] ?? 0), start));
      if (month) {
        const within = states.every((st) => st.used <= st.limit);
        let used: number;
        if (within) {
          // The first spend of the month's counter this month on this instance: its checkpoint first.
          if (floors !== undefined && floors.floor(month.id, monthMs) === undefined)
            await floors.load([month.id], monthMs);
          used = Number(
            await scripts.keygateMonthSpend(
              monthKey,
              month.limit,
              monthEnd(now) - now + MONTH_TTL_SLACK_MS,
              floors?.floor(month.id, monthMs) ?? 0,
            ),
          );
          // Past the quota the spend was undone: the counter holds one less.
          floors?.seen(month.id, monthMs, used > month.limit ? used - 1 : used);
        } else {
          used = atLeastFloor(Number((await redis.get(monthKey)) ?? 0));
        }
        states.push(monthState(month.limit, used, now));
      }
      return states;
    },
  };
}

/** CountHandover.addCounts: one call per counter, as on a Cluster each lives in its own slot. */
export function createAddCounts(o: {
  scripts: ScriptCommands;
  clock: Clock;
  counterKey(id: string, start: number): string;
}): CountHandover['addCounts'] {
  const { scripts, clock, counterKey } = o;
  return async (counts) => {
    const now = clock.now();
    const sent: Promise<number>[] = [];
    for (const { id, windowStart: start, used, month } of counts) {
      // A window already over is skipped: its counter has expired or is about to.
      if (used <= 0 || start !== (month ? monthStart(now) : windowStart(now))) continue;
      const ttl = month ? monthEnd(now) - now + MONTH_TTL_SLACK_MS : start + WINDOW_MS - now + TTL_SLACK_MS;
      sent.push(scripts.keygateLimitAdd(counterKey(id, start), used, ttl));
    }
    await Promise.all(sent);
  };
}

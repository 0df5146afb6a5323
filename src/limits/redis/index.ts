// Stores shared by every gateway instance through Redis (standalone or Cluster), so N instances
// enforce the same budget as one (docs/decisions.md section 3, "Rate-limit windows and headers").
// The keys are laid out in ./keys.ts.

import type { Cluster, Redis } from 'ioredis';
import type { FleetRegistry } from '../fleet.js';
import type { MonthFloors } from '../month-checkpoint.js';
import { clusterGate } from '../redis-cluster/gate.js';
import { clusterTopology, type ClusterTopology } from '../redis-cluster/topology.js';
import { COOLDOWN_MS, FAILURE_LIMIT, FAILURE_WINDOW_MS, type CountHandover, type SharedStores } from '../types.js';
import { systemClock, type Clock } from '../../ops/clock.js';
import { pingWithin, type RedisConnection } from './client.js';
import { cooldownSecondsLeft, createGateBatcher } from './gate.js';
import { redisKeys } from './keys.js';
import { createAddCounts, createRedisLimiter } from './limiter.js';
import { TTL_SLACK_MS, defineScripts } from './scripts.js';

export * from './client.js';

export interface RedisStoreOptions {
  redis: RedisConnection;
  /** Namespace of every key; tests sharing one Redis use a random one each. No braces allowed. */
  prefix?: string;
  clock?: Clock;
  /** How long ready() waits for PING before answering false. */
  readyTimeoutMs?: number;
  /**
   * The months' checkpoint in PostgreSQL (../month-checkpoint.ts): a month's counter Redis lost is
   * restored from it before it is spent on. Stopped (its last write) by close().
   */
  month?: MonthFloors;
}

/** The Redis stores, and the live set of gateway instances that shares their Redis (../fleet.ts). */
export type RedisStores = SharedStores &
  Pick<CountHandover, 'addCounts'> & { fleet: FleetRegistry; topology?: ClusterTopology };

export function createRedisStores(opts: RedisStoreOptions): RedisStores {
  const clock = opts.clock ?? systemClock;
  const prefix = opts.prefix ?? 'kg:';
  const readyTimeoutMs = opts.readyTimeoutMs ?? 250;
  const floors = opts.month;
  const redis = opts.redis;
  const scripts = defineScripts(redis);
  const cluster = redis.isCluster;

  const keys = redisKeys(prefix);
  const counterKey = keys.counter;
  const cooldownKey = keys.cooldown;
  const versionKey = keys.version;

  /**
   * GET several keys: one pipelined round trip on standalone; on a Cluster the keys live in different
   * slots (MGET and a single pipeline would be cross-slot), so the GETs are sent concurrently.
   */
  async function getMany(keys: string[]): Promise<(string | null)[]> {
    if (keys.length === 0) return [];
    if (cluster) return Promise.all(keys.map((k) => redis.get(k)));
    const pipeline = redis.pipeline();
    for (const k of keys) pipeline.get(k);
    const results = (await pipeline.exec()) ?? [];
    return results.map(([err, value]) => {
      if (err) throw err;
      return value as string | null;
    });
  }

  const standaloneGate = cluster
    ? undefined
    : createGateBatcher({
        redis: redis as Redis,
        clock,
        keys,
        ttlSlackMs: TTL_SLACK_MS,
        month: floors,
      });

  const stores: RedisStores = {
    ...(cluster ? { topology: clusterTopology(redis as Cluster) } : {}),
    addCounts: createAddCounts({ scripts, clock, counterKey }),

    fleet: {
      beat: (id, ttlMs) => scripts.keygateFleetBeat(keys.fleet, id, ttlMs),
      async leave(id) {
        await redis.zrem(keys.fleet, id);
      },
    },

    limiter: createRedisLimiter({ redis, scripts, clock, counterKey, getMany, floors }),

    cooldown: {
      async check(ip) {
        return cooldownSecondsLeft(await redis.get(cooldownKey(ip)), clock.now());
      },
      async recordFailure(ip) {
        const now = clock.now();
        const touched = cluster
          ? [keys.failures(ip), cooldownKey(ip)]
          : [keys.failures(ip), cooldownKey(ip), keys.latestCooldown];
        return scripts.keygateRecordFailure(
          touched.length as 2 | 3,
          ...touched,
          now,
          now + FAILURE_WINDOW_MS,
          FAILURE_LIMIT,
          now + COOLDOWN_MS,
          Math.max(FAILURE_WINDOW_MS, COOLDOWN_MS),
        );
      },
    },

    versions: {
      async get(orgId) {
        return Number((await redis.get(versionKey(orgId))) ?? 0);
      },
      async bump(orgId) {
        return redis.incr(versionKey(orgId));
      },
    },

    async preflight(ip, orgId) {
      const keys = orgId === null ? [cooldownKey(ip)] : [cooldownKey(ip), versionKey(orgId)];
      const [cooldown, version] = await getMany(keys);
      return {
        cooldown: cooldownSecondsLeft(cooldown ?? null, clock.now()),
        version: orgId === null ? null : Number(version ?? 0),
      };
    },

    // Not async: the standalone path hands back the batch's promise itself, with no wrapper to settle.
    gate(req) {
      return standaloneGate !== undefined ? standaloneGate(req) : clusterGate(stores, req);
    },

    // With the offline queue on, PING would wait for a reconnect; /readyz must answer now.
    ready: () => pingWithin(redis, readyTimeoutMs),

    async close() {
      // The month's last counts, before the connection goes (the drain is over by now).
      await floors?.stop();
      if (redis.status === 'end') return;
      try {
        await redis.quit();
      } catch {
        // Already closing or never connected: disconnect drops the socket and any reconnect timer.
        redis.disconnect();
      }
    },
  };
  return stores;
}

// Stores shared by every gateway instance through Redis (standalone or Cluster), so N instances
// enforce the same budget as one (docs/decisions.md section 3, "Rate-limit windows and headers").
//
// Key layout (prefix default `kg:`); the part in braces is the Cluster hash tag, so every script
// touches exactly one slot and the keys of one IP's cooldown live together:
//   <prefix>rl:{<counter id>}:<window start ms>   fixed-window counter, TTL = rest of window + slack
//   <prefix>af:{<address>}:failures                hash {n, until}: failed authentications, TTL 15 min
//   <prefix>af:{<address>}:cooldown                cooldown end (clock ms), TTL 15 min
//   <prefix>af:{cooldowns}:latest                  the latest end of any cooldown (clock ms), TTL 15 min
//                                                  from the last one set; standalone only (see FAILURE_LUA)
// where <address> is addressKey(ip): the IPv4 address, or the /64 of an IPv6 one (../address.ts).
//   <prefix>av:{<org id>}                          access version (no TTL: it must never reset to 0)
//   <prefix>rl:{m:<org id>}:<month start ms>       monthly quota's counter, TTL = rest of month + 1 day;
//                                                  checkpointed to PostgreSQL (../month-checkpoint.ts)
//   <prefix>fleet:{gateways}                       sorted set: gateway instance id -> its last beat
//                                                  (Redis's own clock, ms); see ../fleet.ts

import type { Cluster, Redis } from 'ioredis';
import { addressKey } from '../address.js';
import type { FleetRegistry } from '../fleet.js';
import type { MonthFloors } from '../month-checkpoint.js';
import { clusterTopology, type ClusterTopology } from '../redis-cluster/topology.js';
import {
  COOLDOWN_MS,
  FAILURE_LIMIT,
  FAILURE_WINDOW_MS,
  WINDOW_MS,
  windowStart,
  hitOf,
  monthEnd,
  monthStart,
  type CounterRef,
  type CountHandover,
  type SharedStores,
  type GateRequest,
  type GateResult,
} from '../types.js';
import { systemClock, type Clock } from '../../ops/clock.js';
import { pingWithin, type RedisConnection } from './client.js';
import { MONTH_TTL_SLACK_MS, cooldownSecondsLeft, createGateBatcher } from './gate.js';
import { createRedisLimiter } from './limiter.js';
import { TTL_SLACK_MS, defineScripts } from './scripts.js';

export * from './client.js';
export type { ClusterTopology } from '../redis-cluster/topology.js';

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
  if (/[{}]/.test(prefix)) {
    // A brace in the prefix would become the hash tag of every key and put them all in one slot.
    throw new Error(`Redis key prefix must not contain '{' or '}': ${JSON.stringify(prefix)}`);
  }
  if (/\s/.test(prefix)) {
    // The standalone gate packs its keys into one newline-separated argument (./gate.ts).
    throw new Error(`Redis key prefix must not contain whitespace: ${JSON.stringify(prefix)}`);
  }

  const redis = opts.redis;
  const scripts = defineScripts(redis);
  const cluster = redis.isCluster;

  const counterKey = (id: string, start: number) => `${prefix}rl:{${id}}:${start}`;
  const failuresKey = (ip: string) => `${prefix}af:{${addressKey(ip)}}:failures`;
  const cooldownKey = (ip: string) => `${prefix}af:{${addressKey(ip)}}:cooldown`;
  const versionKey = (orgId: number) => `${prefix}av:{${orgId}}`;
  const latestCooldownKey = `${prefix}af:{cooldowns}:latest`;
  const fleetKey = `${prefix}fleet:{gateways}`;

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
        keys: { counter: counterKey, cooldown: cooldownKey, version: versionKey, latestCooldown: latestCooldownKey },
        ttlSlackMs: TTL_SLACK_MS,
        month: floors,
      });

  /** A Cluster's gate: the keys live in different slots, so the preflight's two GETs, then the spend or the reads. */
  async function clusterGate(req: GateRequest, refs: CounterRef[]): Promise<GateResult> {
    const pre = await stores.preflight(req.ip, req.orgId);
    if (pre.cooldown > 0) return { kind: 'cooldown', seconds: pre.cooldown };
    if (pre.version !== req.version) return { kind: 'stale' };
    if (req.spend) {
      const [key, ip, month] = await stores.limiter.spend(req.spend, 1);
      return { kind: 'spent', hit: hitOf(key, ip, month) };
    }
    return { kind: 'peeked', states: await stores.limiter.spend(refs, 0) };
  }

  const stores: RedisStores = {
    ...(cluster ? { topology: clusterTopology(redis as Cluster) } : {}),
    // One call per counter: on a Cluster each lives in its own slot.
    async addCounts(counts) {
      const now = clock.now();
      const sent: Promise<number>[] = [];
      for (const { id, windowStart: start, used, month } of counts) {
        // A window already over is skipped: its counter has expired or is about to.
        if (used <= 0 || start !== (month ? monthStart(now) : windowStart(now))) continue;
        const ttl = month ? monthEnd(now) - now + MONTH_TTL_SLACK_MS : start + WINDOW_MS - now + TTL_SLACK_MS;
        sent.push(scripts.keygateLimitAdd(counterKey(id, start), used, ttl));
      }
      await Promise.all(sent);
    },

    fleet: {
      beat: (id, ttlMs) => scripts.keygateFleetBeat(fleetKey, id, ttlMs),
      async leave(id) {
        await redis.zrem(fleetKey, id);
      },
    },

    limiter: createRedisLimiter({ redis, scripts, clock, counterKey, getMany, floors }),

    cooldown: {
      async check(ip) {
        return cooldownSecondsLeft(await redis.get(cooldownKey(ip)), clock.now());
      },
      async recordFailure(ip) {
        const now = clock.now();
        const keys = cluster
          ? [failuresKey(ip), cooldownKey(ip)]
          : [failuresKey(ip), cooldownKey(ip), latestCooldownKey];
        return scripts.keygateRecordFailure(
          keys.length as 2 | 3,
          ...keys,
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
      return standaloneGate !== undefined ? standaloneGate(req) : clusterGate(req, req.spend ?? req.peek ?? []);
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

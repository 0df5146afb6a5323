// The rate limiter's and access versions' stores of startApp: Redis behind the breaker (standalone,
// Cluster or Sentinel) when one is configured, else this process's memory; or what a test hands in.
import type { Logger } from 'pino';
import { isMisconfigured, settingError } from '../config/errors.js';
import { createMemoryStores } from '../limits/memory/index.js';
import {
  createRedisClient,
  createRedisStores,
  redisClientSettings,
  redisSettingName,
  type RedisConnection,
} from '../limits/redis/index.js';
import { createResilientStores } from '../limits/resilient/index.js';
import { MonthCheckpoint } from '../limits/month-checkpoint.js';
import type { Queryable } from '../db/types.js';
import type { SharedStores } from '../limits/types.js';
import type { Clock } from '../ops/clock.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { AppSettings } from './types.js';

export interface AppStores {
  /** The Redis connection, when the stores are this process's own and Redis is configured. */
  redis: RedisConnection | null;
  stores: SharedStores;
}

export async function openStores(o: {
  settings: AppSettings;
  log: Logger;
  clock: Clock;
  metrics: GatewayMetrics;
  injected?: SharedStores;
  redisPrefix?: string;
  /** Where the months' quota counts are checkpointed when Redis holds them. */
  db?: Queryable;
  /** Redis came back after an outage: versions bumped meanwhile never reached this process. */
  onRecovered(): void;
}): Promise<AppStores> {
  const s = o.settings;
  const clientSettings = o.injected ? null : redisClientSettings(s);
  const redis = clientSettings ? createRedisClient(clientSettings) : null;
  // Reconnect attempts emit an error each; the breaker logs the outage once per transition instead.
  redis?.on('error', (err: Error) => o.log.debug({ err: err.message }, 'redis connection error'));
  // Redis may lose a month's counter (a restart without persistence, a failover to a replica that
  // lacked it); the database keeps what was spent (src/limits/month-checkpoint.ts). Memory has no failover.
  const month =
    redis && o.db
      ? new MonthCheckpoint(o.db, o.clock, s.MONTH_CHECKPOINT_MS, (err) =>
          o.log.warn({ err: err.message }, 'month checkpoint failed; kept for the next'),
        )
      : undefined;
  const shared = redis
    ? createRedisStores({ redis, prefix: o.redisPrefix ?? s.REDIS_KEY_PREFIX, clock: o.clock, month })
    : null;
  const stores: SharedStores =
    o.injected ??
    (shared
      ? createResilientStores({
          primary: shared,
          // The live set of gateway instances: open mode falls back to this instance's share.
          fleet: shared.fleet,
          fallback: createMemoryStores({ clock: o.clock }),
          clock: o.clock,
          mode: s.RATE_LIMIT_FAILURE_MODE,
          // Redis is judged by its connection and by replies overdue in free event-loop time, not
          // by a timer on a loop that may be busy (src/limits/resilient/).
          connection: redis ?? undefined,
          // A Cluster: one breaker per primary (src/limits/resilient/).
          topology: shared.topology,
          replyTimeoutMs: s.REDIS_COMMAND_TIMEOUT_MS,
          log: o.log.child({ c: 'limits' }),
          events: {
            onDegraded: (on) => o.metrics.degraded(on),
            onRecovered: o.onRecovered,
            observe: (op, sec, ok) => o.metrics.redisLatency(op, sec, ok),
            degradedCall: (mode) => o.metrics.degradedCall(mode),
          },
        })
      : createMemoryStores({ clock: o.clock }));
  // A Redis that is down is an outage (start degraded); a host that does not resolve or refused
  // credentials a bad setting.
  const setting = redisSettingName(s);
  const state = redis ? await waitForRedis(redis, 5_000) : true;
  if (state instanceof Error) {
    redis?.disconnect();
    throw settingError(setting, state, { url: setting === 'REDIS_URL' ? s.REDIS_URL : undefined });
  }
  if (!state) o.log.warn({ setting }, 'redis does not answer yet; starting degraded');
  month?.start();
  return { redis, stores };
}

/** Until the Redis client is connected: true; false after `ms`; at once a bad setting's error (isMisconfigured). */
function waitForRedis(
  redis: {
    status: string;
    on(ev: string, fn: (err: Error) => void): unknown;
    off(ev: string, fn: (err: Error) => void): unknown;
  },
  ms: number,
): Promise<boolean | Error> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (v: boolean | Error) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      resolve(v);
    };
    const onReady = () => done(true);
    const onError = (err: Error) => {
      if (isMisconfigured(err)) done(err);
    };
    const timer = setTimeout(() => done(false), ms);
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
}

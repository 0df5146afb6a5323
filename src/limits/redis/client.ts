// The Redis client of the stores: standalone, Sentinel or Cluster, from the settings; its reconnection
// pace, and a PING bounded in time.
import { Cluster, Redis } from 'ioredis';

export type RedisConnection = Redis | Cluster;

export interface RedisClientOptions {
  /** e.g. redis://127.0.0.1:6379; for a Cluster, its credentials and TLS apply to every node. */
  url?: string;
  /** `host:port` seeds; when given the client is a Cluster client. */
  clusterNodes?: string[];
  /** `host:port` of Redis Sentinels; when given the client asks them for the primary named `sentinelName`. */
  sentinels?: string[];
  sentinelName?: string;
  /** The sentinels' own password. */
  sentinelPassword?: string;
  /** The password of the primary and its replicas (Sentinel mode). */
  password?: string;
  /**
   * A safety net only: a command unanswered after this long fails, so none waits forever. Whether
   * Redis can be reached is judged by the breaker (../resilient/), which does not count the time
   * the gateway's own event loop was blocked. Default 10 s.
   */
  commandTimeoutMs?: number;
}

/**
 * The longest wait between two reconnection attempts. ioredis doubles its wait up to 5 s, so after a
 * 2 s failover one instance's client came back at once and another's 1.4 s later; all that time the
 * first spent on counters lacking what the second's fallback had admitted, which it hands over only
 * when it is back (31 admitted of a 20 budget). A failed attempt costs a refused connection, or one
 * question to a sentinel: cheap enough to make every few hundred milliseconds from each instance.
 */
export const RECONNECT_MAX_MS = 200;

/** ioredis' retryStrategy: 50, 100, 150 ms, then every RECONNECT_MAX_MS, plus up to 50 ms of jitter so a fleet does not knock in step. */
export function reconnectDelay(attempt: number, random: () => number = Math.random): number {
  return Math.min(attempt * 50, RECONNECT_MAX_MS) + Math.floor(random() * 50);
}

export function createRedisClient(opts: RedisClientOptions): RedisConnection {
  const common = {
    commandTimeout: opts.commandTimeoutMs ?? 10_000,
    // One retry after a reconnect at most: a rate-limit answer that arrives late is worth little.
    maxRetriesPerRequest: 1,
    // No auto-pipelining: measured, it batched nothing at 50 connections (one gate call per tick) and
    // its Pipeline objects cost ~10 % of the gateway's CPU (bench/RESULTS.md).
  };
  if (opts.clusterNodes !== undefined && opts.clusterNodes.length > 0) {
    const fromUrl = opts.url !== undefined ? urlOptions(opts.url) : {};
    return new Cluster(opts.clusterNodes, {
      // No reconnectDelay: ioredis never reconnects a lost Cluster node, it reads the slot map again
      // (every CLUSTER_REFRESH_MS while a primary is down, ../resilient/slot-map.ts).
      // Commands issued while the cluster is still discovering its slots wait instead of failing.
      enableOfflineQueue: true,
      lazyConnect: false,
      redisOptions: { ...fromUrl, ...common },
    });
  }
  if (opts.sentinels !== undefined && opts.sentinels.length > 0) {
    const fromUrl = opts.url !== undefined ? urlOptions(opts.url) : {};
    return new Redis({
      ...fromUrl,
      ...common,
      sentinels: opts.sentinels.map(hostPort),
      name: opts.sentinelName,
      ...(opts.sentinelPassword !== undefined ? { sentinelPassword: opts.sentinelPassword } : {}),
      ...(opts.password !== undefined ? { password: opts.password } : {}),
      // No failoverDetector: measured, a +switch-master arriving while the client was still
      // reconnecting left it closed for good (one instance of two never came back). A dead primary
      // closes the connection, and each reconnect asks the sentinels for the primary again.
      enableOfflineQueue: true,
      lazyConnect: false,
      retryStrategy: reconnectDelay,
    });
  }
  const options = { ...common, enableOfflineQueue: true, lazyConnect: false, retryStrategy: reconnectDelay };
  return opts.url !== undefined ? new Redis(opts.url, options) : new Redis(options);
}

/** The Redis settings as client options, or null when no Redis is configured. */
export function redisClientSettings(s: {
  REDIS_URL?: string;
  REDIS_CLUSTER_NODES?: string[];
  REDIS_SENTINELS?: string[];
  REDIS_SENTINEL_NAME?: string;
  REDIS_SENTINEL_PASSWORD?: string;
  REDIS_PASSWORD?: string;
}): RedisClientOptions | null {
  if (!s.REDIS_URL && !s.REDIS_CLUSTER_NODES?.length && !s.REDIS_SENTINELS?.length) return null;
  return {
    url: s.REDIS_URL,
    clusterNodes: s.REDIS_CLUSTER_NODES,
    sentinels: s.REDIS_SENTINELS,
    sentinelName: s.REDIS_SENTINEL_NAME,
    sentinelPassword: s.REDIS_SENTINEL_PASSWORD,
    password: s.REDIS_PASSWORD,
  };
}

/** The setting that names the Redis the gateway uses (for errors about it). */
export function redisSettingName(s: { REDIS_CLUSTER_NODES?: string[]; REDIS_SENTINELS?: string[] }): string {
  return s.REDIS_SENTINELS?.length
    ? 'REDIS_SENTINELS'
    : s.REDIS_CLUSTER_NODES?.length
      ? 'REDIS_CLUSTER_NODES'
      : 'REDIS_URL';
}

function hostPort(entry: string): { host: string; port: number } {
  const colon = entry.lastIndexOf(':');
  if (colon <= 0) return { host: entry, port: 26379 };
  return { host: entry.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(entry.slice(colon + 1)) };
}

/** Credentials, database and TLS from a redis:// or rediss:// URL, for the nodes of a Cluster. */
function urlOptions(url: string): { username?: string; password?: string; tls?: object } {
  const u = new URL(url);
  const out: { username?: string; password?: string; tls?: object } = {};
  if (u.username !== '') out.username = decodeURIComponent(u.username);
  if (u.password !== '') out.password = decodeURIComponent(u.password);
  if (u.protocol === 'rediss:') out.tls = {};
  return out;
}

/** PING, answered within `timeoutMs` (false when not, or on an error). */
export async function pingWithin(client: RedisConnection, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([
      client.ping().then(
        (reply) => reply === 'PONG',
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

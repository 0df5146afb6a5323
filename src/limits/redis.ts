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
// where <address> is addressKey(ip): the IPv4 address, or the /64 of an IPv6 one (./address.ts).
//   <prefix>av:{<org id>}                          access version (no TTL: it must never reset to 0)
//   <prefix>rl:{m:<org id>}:<month start ms>       monthly quota's counter, TTL = rest of month + 1 day;
//                                                  checkpointed to PostgreSQL (./month-checkpoint.ts)
//   <prefix>fleet:{gateways}                       sorted set: gateway instance id -> its last beat
//                                                  (Redis's own clock, ms); see ./fleet.ts

import { Cluster, Redis } from 'ioredis';
import { addressKey } from './address.js';
import { keySlot, SLOTS } from './slot.js';
import { MONTH_LUA, MONTH_TTL_SLACK_MS, cooldownSecondsLeft, createGateBatcher } from './redis-gate.js';
import type { FleetRegistry } from './fleet.js';
import type { MonthFloors } from './month-checkpoint.js';
import {
  COOLDOWN_MS,
  FAILURE_LIMIT,
  FAILURE_WINDOW_MS,
  WINDOW_MS,
  windowStart,
  hitOf,
  layerState,
  monthEnd,
  monthStart,
  monthState,
  type CounterRef,
  type CountHandover,
  type LayerState,
  type SharedStores,
  type GateRequest,
  type GateResult,
} from './types.js';
import { systemClock, type Clock } from '../ops/clock.js';

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
   * Redis can be reached is judged by the breaker (./resilient.ts), which does not count the time
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
      // (every CLUSTER_REFRESH_MS while a primary is down, ./resilient.ts).
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

export interface RedisStoreOptions {
  redis: RedisConnection;
  /** Namespace of every key; tests sharing one Redis use a random one each. No braces allowed. */
  prefix?: string;
  clock?: Clock;
  /** How long ready() waits for PING before answering false. */
  readyTimeoutMs?: number;
  /**
   * The months' checkpoint in PostgreSQL (./month-checkpoint.ts): a month's counter Redis lost is
   * restored from it before it is spent on. Stopped (its last write) by close().
   */
  month?: MonthFloors;
}

/** Extra TTL past the window's end, so an instance whose clock runs a little behind still finds its counter. */
const TTL_SLACK_MS = 5_000;

// Spend one token from each key (RateLimiter.spend with cost 1); the key is created with its TTL in the same atomic step, so no
// counter can outlive its window (no read-then-write: the returned count is the one this hit made).
// ARGV[1]: TTL in ms.
const HIT_LUA = `
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('PEXPIRE', key, ARGV[1]) end
  out[i] = n
end
return out
`;

// KEYS[1]: failures hash, KEYS[2]: cooldown key (same hash tag, so same slot), KEYS[3] (standalone
// only): the latest end of any cooldown, which the gate script reads once per batch and skips every
// address's cooldown key while it lies in the past (GATE_LUA). It is raised, never lowered, in the same
// step as the cooldown and with the same TTL, so it outlives every cooldown key; a Cluster cannot hold
// it beside KEYS[1..2] (another slot), and its gate reads each address's cooldown anyway.
// ARGV: now, failure window end, failure limit, cooldown end, TTL of both (ms).
// The failure window's end is kept in the hash and compared with the caller's clock, so every
// instance (and a test's fake clock) agrees on it; the PX TTL only frees the memory afterwards.
// Checking the cooldown and counting are one step (docs/decisions.md section 3: the 6th request gets 150006,
// however many arrive at once): a failure that meets a running cooldown is not counted, and the reply
// is its seconds left (at least 1); a counted failure, the 5th included, replies 0.
const FAILURE_LUA = `
local now = tonumber(ARGV[1])
local cooldownEnd = tonumber(redis.call('GET', KEYS[2]))
if cooldownEnd ~= nil and cooldownEnd > now then
  return math.ceil((cooldownEnd - now) / 1000)
end
local untilMs = tonumber(redis.call('HGET', KEYS[1], 'until'))
if untilMs == nil or untilMs <= now then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'until', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
if n >= tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
  redis.call('DEL', KEYS[1])
  if KEYS[3] and tonumber(ARGV[4]) > tonumber(redis.call('GET', KEYS[3]) or '0') then
    redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
  end
end
return 0
`;

// KEYS[1]: the fleet's live set; ARGV[1]: this instance's id, ARGV[2]: how long a beat counts (ms).
// Redis's clock, not the instances': their clocks may disagree, the set's one server (per slot) cannot.
const FLEET_BEAT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
`;

// KEYS[1]: a counter; ARGV[1]: what the fallback counted in its window, ARGV[2]: the counter's TTL (ms).
// Created with its TTL in the same step when the fallback's count is its first, as HIT_LUA does.
const ADD_LUA = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n
`;

// ioredis adds methods named after the definitions; these names are unlikely to clash with
// commands another module defines on the same connection.
const HIT_CMD = 'keygateLimitHit';
const FAILURE_CMD = 'keygateRecordFailure';
const MONTH_CMD = 'keygateMonthSpend';
const FLEET_BEAT_CMD = 'keygateFleetBeat';
const ADD_CMD = 'keygateLimitAdd';

interface ScriptCommands {
  keygateMonthSpend(key: string, quota: number, ttlMs: number, floor: number): Promise<number>;
  keygateLimitAdd(key: string, count: number, ttlMs: number): Promise<number>;
  keygateLimitHit(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number[]>;
  /** KEYS: the failures hash, the cooldown key and (standalone) the latest cooldown's end; see FAILURE_LUA. */
  keygateRecordFailure(numKeys: 2 | 3, ...keysThenArgs: (string | number)[]): Promise<number>;
  keygateFleetBeat(fleetKey: string, id: string, ttlMs: number): Promise<number>;
}

/**
 * Where a Cluster keeps each counter, cooldown and access version: the node (`host:port`) that owns
 * its hash tag's slot in the client's slot map now. The breaker judges each node on its own
 * (./resilient.ts).
 */
export interface ClusterTopology {
  counter(id: string): string;
  address(ip: string): string;
  org(orgId: number): string;
  /** The nodes that own slots now. */
  primaries(): Set<string>;
  /** PING one node; false when it does not answer within `timeoutMs` (or the client has no connection to it). */
  ping(node: string, timeoutMs: number): Promise<boolean>;
  /** Reads the slot map again (CLUSTER SLOTS): a promoted replica is used from then on. */
  refresh(): Promise<void>;
  /** A node's connection closed, or became ready. */
  onNode(event: 'close' | 'ready', listener: (node: string) => void): void;
}

/** The Redis stores, and the live set of gateway instances that shares their Redis (./fleet.ts). */
export type RedisStores = SharedStores &
  Pick<CountHandover, 'addCounts'> & { fleet: FleetRegistry; topology?: ClusterTopology };

/** PING, answered within `timeoutMs` (false when not, or on an error). */
async function pingWithin(client: RedisConnection, timeoutMs: number): Promise<boolean> {
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

type NodeClient = Redis & { options: { host?: string; port?: number } };
const nodeKey = (node: NodeClient) => `${node.options.host}:${node.options.port}`;

function clusterTopology(cluster: Cluster): ClusterTopology {
  // ioredis keeps the slot map as `slots[slot] = [primary, ...replicas]` (refreshed on MOVED, on its
  // own interval and by `refresh`); it is not in its typings.
  const slots = () => (cluster as unknown as { slots: (string[] | undefined)[] }).slots;
  const owner = (tag: string) => slots()[keySlot(tag)]?.[0] ?? '';
  const listeners = { close: [] as ((node: string) => void)[], ready: [] as ((node: string) => void)[] };
  const watched = new WeakSet<NodeClient>();
  const watch = (node: NodeClient) => {
    if (watched.has(node)) return;
    watched.add(node);
    node.on('close', () => listeners.close.forEach((listener) => listener(nodeKey(node))));
    node.on('ready', () => listeners.ready.forEach((listener) => listener(nodeKey(node))));
  };
  // The seed nodes may be connecting already; the others come with the slot map.
  for (const node of cluster.nodes('all')) watch(node as NodeClient);
  cluster.on('+node', watch);
  return {
    counter: owner,
    address: (ip) => owner(addressKey(ip)),
    org: (orgId) => owner(String(orgId)),
    primaries() {
      const out = new Set<string>();
      const map = slots();
      for (let slot = 0; slot < SLOTS; slot++) {
        const node = map[slot]?.[0];
        if (node !== undefined) out.add(node);
      }
      return out;
    },
    async ping(node, timeoutMs) {
      const client = cluster.nodes('all').find((n) => nodeKey(n as NodeClient) === node);
      if (client === undefined) return false;
      return pingWithin(client, timeoutMs);
    },
    refresh() {
      const refresher = cluster as unknown as { refreshSlotsCache(done: (err?: Error) => void): void };
      return new Promise((resolve) => refresher.refreshSlotsCache(() => resolve()));
    },
    onNode(event, listener) {
      listeners[event].push(listener);
    },
  };
}

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
    // The standalone gate packs its keys into one newline-separated argument (./redis-gate.ts).
    throw new Error(`Redis key prefix must not contain whitespace: ${JSON.stringify(prefix)}`);
  }

  const redis = opts.redis;
  // defineCommand sends EVALSHA and falls back to EVAL when the script is not loaded yet.
  redis.defineCommand(HIT_CMD, { lua: HIT_LUA });
  redis.defineCommand(FAILURE_CMD, { lua: FAILURE_LUA });
  redis.defineCommand(MONTH_CMD, { lua: MONTH_LUA, numberOfKeys: 1 });
  redis.defineCommand(ADD_CMD, { lua: ADD_LUA, numberOfKeys: 1 });
  redis.defineCommand(FLEET_BEAT_CMD, { lua: FLEET_BEAT_LUA, numberOfKeys: 1 });
  const scripts = redis as unknown as ScriptCommands;
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

    limiter: {
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
    },

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

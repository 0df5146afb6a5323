// What the resilient stores take and give: the stores they wrap, the events they report, and the
// bounds of judging a Redis server unreachable (./index.ts describes the whole).
import type { Logger } from 'pino';
import type { FleetRegistry } from '../fleet.js';
import type { LoopClock } from '../loop-clock.js';
import type { ClusterTopology } from '../redis-cluster/topology.js';
import type { CountHandover, SharedStores } from '../types.js';
import type { Clock } from '../../ops/clock.js';

export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

export interface BreakerEvents {
  /** Called once per transition. */
  onDegraded?(degraded: boolean): void;
  /** Called after Redis came back: caches that trusted its versions must be rebuilt. */
  onRecovered?(): void;
  /** Latency of each primary call, in seconds. */
  observe?(op: string, seconds: number, ok: boolean): void;
  /** A call answered without Redis: from the fallback (open) or refused (closed). */
  degradedCall?(mode: 'open' | 'closed'): void;
}

/** The part of a Redis client the breaker watches (ioredis Redis and Cluster both fit). */
export interface ConnectionEvents {
  on(event: 'close' | 'ready', listener: () => void): unknown;
}

export interface ResilientStores extends SharedStores {
  degraded(): boolean;
  /** Gateway instances live when Redis last answered (open mode with a fleet registry; else 1). */
  liveInstances(): number;
}

/** The shared store: with `addCounts`, what the fallback counted during an outage is added to it when it answers again. */
export type PrimaryStores = SharedStores & Partial<Pick<CountHandover, 'addCounts'>>;
/** This instance's own store, answering while the shared one cannot be reached (open mode). */
export type FallbackStores = SharedStores & Partial<CountHandover>;

export interface ResilientOptions {
  primary: PrimaryStores;
  fallback: FallbackStores;
  mode: 'open' | 'closed';
  log: Logger;
  events?: BreakerEvents;
  /**
   * The live set of gateway instances in Redis. In open mode this instance beats into it every
   * `probeIntervalMs` while Redis answers, and without Redis admits its share (../fleet.ts).
   */
  fleet?: FleetRegistry;
  /** The primary's client: its `close` opens the breaker at once, its `ready` starts a probe (not used with `topology`). */
  connection?: ConnectionEvents;
  /** A Cluster's nodes (RedisStores.topology): one breaker per primary, fed by its own connection's events. */
  topology?: ClusterTopology;
  probeIntervalMs?: number;
  /** Free event-loop time Redis may go without answering anything while asked (REDIS_COMMAND_TIMEOUT_MS; at least MIN_SILENCE_MS). */
  replyTimeoutMs?: number;
  /** How long calls must keep failing, with none succeeding, before Redis is judged unreachable. */
  failureSpanMs?: number;
  /** ...and how many of them at least. */
  failuresToOpen?: number;
  /** Wall clock in ms (probe spacing, failure span, latency); injected by tests. */
  now?: () => number;
  /** The stores' clock, which places counters in windows: one reading for a spend split across a Cluster's nodes. */
  clock?: Clock;
  /** Injected by tests; by default a watchdog on the real event loop. */
  loopClock?: LoopClock;
}

/**
 * The least silence that counts. Two things make a reachable Redis silent for a while:
 *   - a lost TCP segment. Nothing after it is delivered until it is retransmitted, at least 200 ms
 *     later on Linux (the minimum retransmission timeout; more when the link's round trip varies),
 *     and every reply behind it waits too. At 5 % loss that happens several times a second under
 *     load, and now and then a request is held by one and its reply by another, back to back: a
 *     lossy link must not count as an outage.
 *   - a loaded machine keeping Redis off the CPU (silences of 54 and 65 ms of free loop time, every
 *     reply then arriving, in a bench at load average 21 on 2 cores).
 * 900 ms waits for a retransmission each way of up to 400 ms (a round trip that varies by up to
 * ~200 ms) with room for the machine's noise, and still switches within about a second of a silent
 * partition or a stall (a killed Redis closes its connection and switches at once).
 */
export const MIN_SILENCE_MS = 900;

/** How often the Cluster's slot map is read again while one of its primaries is down. */
export const CLUSTER_REFRESH_MS = 200;

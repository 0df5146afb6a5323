// The rate-limit, failed-authentication and access-version stores behind one set of interfaces.
// Implementations: memory (single instance) and Redis (shared by every gateway instance).
// See ../shared/design/CONTRACT.md section 3.

/** Milliseconds since the epoch; injected so windows can be tested without sleeping. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** One layer's state in the current fixed window, after (hit) or without (peek) spending. */
export interface LayerState {
  limit: number;
  used: number;
  remaining: number; // max(0, limit - used)
  /** Unix time in seconds when the current window ends (start of the next wall-clock minute). */
  reset: number;
}

/** A counter to spend from: `id` names the counter (e.g. `k:1000:read` or `ip:1.2.3.4`), `limit` its budget. */
export interface CounterRef {
  id: string;
  limit: number;
}

export interface HitResult {
  key: LayerState;
  ip: LayerState;
  /** true when both layers were within their limit after spending (used <= limit). */
  allowed: boolean;
}

export interface RateLimiter {
  /**
   * Spend one token in the key's bucket counter and one in the IP counter, atomically per counter
   * (no read-then-write), whether or not the request is then accepted.
   */
  hit(key: CounterRef, ip: CounterRef): Promise<HitResult>;
  /** Spend one token in a single counter (the /v1 interface has one layer). */
  hitOne(counter: CounterRef): Promise<LayerState>;
  /** Read the current state of counters without spending anything. */
  peek(counters: CounterRef[]): Promise<LayerState[]>;
}

export interface FailureCooldown {
  /** Seconds left in the IP's cooldown (integer, >= 1), or 0 when there is none. */
  check(ip: string): Promise<number>;
  /** Count one failed authentication for the IP; the 5th within 15 minutes starts a 15-minute cooldown. */
  recordFailure(ip: string): Promise<void>;
}

/**
 * A per-organization access version. Every writer of access data bumps it after its commit; the gateway
 * keeps a cached principal only while the version it was resolved at is still current.
 */
export interface AccessVersions {
  get(orgId: number): Promise<number>;
  bump(orgId: number): Promise<number>;
}

/**
 * The round trip the gateway makes before resolving a key: the IP's cooldown and, when the key's
 * principal is cached, its organization's access version. Redis answers both in one round trip.
 */
export interface Preflight {
  preflight(ip: string, orgId: number | null): Promise<{ cooldown: number; version: number | null }>;
}

export interface LimitStores {
  limiter: RateLimiter;
  cooldown: FailureCooldown;
  versions: AccessVersions;
  preflight: Preflight['preflight'];
  /** Resolves once the store answers (Redis PING); used by /readyz. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

export const WINDOW_MS = 60_000;
export const FAILURE_LIMIT = 5;
export const FAILURE_WINDOW_MS = 15 * 60_000;
export const COOLDOWN_MS = 15 * 60_000;

/** Start of the fixed window (aligned to the wall-clock minute) that contains `now`. */
export function windowStart(now: number): number {
  return now - (now % WINDOW_MS);
}

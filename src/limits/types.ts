// The store layer's port: the rate-limit and failed-authentication stores, and the access versions'
// storage, behind one set of interfaces; everything above src/limits/ uses these.
// Backends: ./memory/ (single instance), ./redis/ (shared by every gateway instance) and
// ./redis-cluster/; ./resilient/ wraps a shared backend in breakers with a per-instance fallback.
// See docs/decisions.md section 3.
import { WINDOW_SECONDS } from '../config/contract.js';

/** One layer's state in the current fixed window, after spending (cost 1) or without (cost 0). */
export interface LayerState {
  limit: number;
  used: number;
  remaining: number; // max(0, limit - used)
  /** Unix time in seconds when the current window ends (start of the next wall-clock minute). */
  reset: number;
}

/** A layer's state from its counter's count in the window that starts at `windowStartMs`. */
export function layerState(limit: number, used: number, windowStartMs: number): LayerState {
  return { limit, used, remaining: Math.max(0, limit - used), reset: (windowStartMs + WINDOW_MS) / 1000 };
}

/**
 * A counter to spend from: `id` names the counter (e.g. `k:1000:read` or `ip:1.2.3.4`), `limit` its budget.
 * A `month` counter (a monthly quota, `m:<org id>`) counts in the calendar month (UTC) instead of the
 * minute, comes last in a spend, and is spent only when every other counter of that spend is within
 * its limit; a spend that would take it past its limit is undone at once (the request is refused),
 * so it counts exactly the requests admitted. Its state's `reset` is the month's end.
 */
export interface CounterRef {
  id: string;
  limit: number;
  month?: true;
}

/** Start of the calendar month (UTC) that contains `now`, in ms. */
export function monthStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** Start of the next calendar month (UTC), in ms: when a monthly quota renews. */
export function monthEnd(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** A monthly counter's state; `used` above `limit` means this request was refused (and not counted). */
export function monthState(limit: number, used: number, now: number): LayerState {
  return { limit, used, remaining: Math.max(0, limit - used), reset: monthEnd(now) / 1000 };
}

export interface HitResult {
  key: LayerState;
  ip: LayerState;
  /** The organization's monthly quota, when it has one. */
  month?: LayerState;
  /** true when every layer was within its limit after spending (used <= limit). */
  allowed: boolean;
}

/** The result of spending one token in each layer, from the counters' states after the spend. */
export function hitOf(key: LayerState, ip: LayerState, month?: LayerState): HitResult {
  const allowed = key.used <= key.limit && ip.used <= ip.limit && (month === undefined || month.used <= month.limit);
  return month === undefined ? { key, ip, allowed } : { key, ip, month, allowed };
}

/**
 * Fixed-window counters. `spend` spends `cost` tokens in each counter, atomically per counter (no
 * read-then-write: each state is the count this spend made), whether or not the request is then
 * accepted; cost 0 reads the counters without spending. States come back in the counters' order, all
 * from one clock reading, so the layers of one request never land in different windows. A caller that
 * splits one request's counters over several calls (a Cluster's nodes) passes that reading as `at` (ms).
 */
export interface RateLimiter {
  spend(counters: CounterRef[], cost: 0 | 1, at?: number): Promise<LayerState[]>;
}

/** Spend one token in the key's bucket counter and one in the IP counter (the /v2 interface's two layers). */
export async function spendPair(limiter: RateLimiter, key: CounterRef, ip: CounterRef): Promise<HitResult> {
  const [keyState, ipState] = await limiter.spend([key, ip], 1);
  return hitOf(keyState, ipState);
}

/** Spend one token in a single counter (the /v1 interface has one layer). */
export async function spendOne(limiter: RateLimiter, counter: CounterRef): Promise<LayerState> {
  const [state] = await limiter.spend([counter], 1);
  return state;
}

/**
 * Failed authentications per client address: an IPv4 address, or the /64 of an IPv6 one (addressKey in
 * ./address.ts); an IPv4-mapped IPv6 spelling is its IPv4 address.
 */
export interface FailureCooldown {
  /** Seconds left in the address's cooldown (integer, >= 1), or 0 when there is none. */
  check(ip: string): Promise<number>;
  /**
   * Check the cooldown and count one failed authentication, in one atomic step. Returns 0 when this
   * failure was counted (answer 401 150002; the 5th within 15 minutes starts a 15-minute cooldown and
   * still returns 0), or the seconds left (>= 1) of a cooldown already running when it arrived (answer
   * 429 150006; nothing was counted).
   */
  recordFailure(ip: string): Promise<number>;
}

/**
 * The gateway's one round trip for a cached principal: the IP's cooldown, the organization's access
 * version, then, only when the cooldown is clear and the version is the expected one, either spend
 * one token in each `spend` counter or read the `peek` counters. On a standalone Redis this is one
 * script; a Cluster needs two round trips (the keys live in different slots).
 */
export interface GateRequest {
  ip: string;
  orgId: number;
  version: number;
  /** [key bucket, IP] or [key bucket, IP, month]: spend them (step 11; the month only if both pass). */
  spend?: [CounterRef, CounterRef] | [CounterRef, CounterRef, CounterRef];
  /** Otherwise read these without spending (rejections before step 11, the rate-limit route). */
  peek?: CounterRef[];
}

export type GateResult =
  | { kind: 'cooldown'; seconds: number }
  | { kind: 'stale' }
  | { kind: 'spent'; hit: HitResult }
  | { kind: 'peeked'; states: LayerState[] };

/**
 * The counters: every rate-limit layer's windows and the failed-authentication cooldown. What a limiter
 * is, whatever holds the counts (memory, Redis).
 */
export interface LimitStores {
  limiter: RateLimiter;
  cooldown: FailureCooldown;
  /** Resolves once the store answers (Redis PING); used by /readyz. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * A per-organization access version. Every writer of access data bumps it after its commit; the gateway
 * keeps a cached principal only while the version it was resolved at is still current. It only grows
 * (no TTL, never swept: it must never reset to 0). What a version means is access/'s
 * (src/access/versions.ts); it is declared here, once, because the stores hold it and access/ sits
 * above limits/.
 */
export interface AccessVersions {
  get(orgId: number): Promise<number>;
  bump(orgId: number): Promise<number>;
}

/**
 * The round trip the gateway makes before resolving a key: the IP's cooldown and, when the key's
 * principal is cached, its organization's access version. Redis answers both in one round trip.
 */
export type Preflight = (ip: string, orgId: number | null) => Promise<{ cooldown: number; version: number | null }>;

/** The access part of the shared stores: what the principal cache, the seed and every writer of access data use. */
export interface AccessStores {
  versions: AccessVersions;
  preflight: Preflight;
}

/**
 * The counters with the access versions' storage beside them, as the stores implement them: one Redis
 * (or one process's memory) holds both, so the gate reads the cooldown and the version and spends the
 * counters in one round trip.
 */
export interface SharedStores extends LimitStores, AccessStores {
  /** Cooldown, version check and spend-or-peek in one round trip where the store allows it. */
  gate(req: GateRequest): Promise<GateResult>;
}

/**
 * What one store counted alone (the open-mode fallback while Redis was away), handed to the shared
 * store when it answers again, so the requests admitted meanwhile still count against the window.
 */
export interface CountTaken {
  id: string;
  /** The counter's window start (ms); the month's start for a monthly quota's counter. */
  windowStart: number;
  used: number;
  month?: true;
}

/** A store that hands over what it counted (the fallback) or takes it in (the shared store). */
export interface CountHandover {
  /** Removes and returns the current windows' counts of the counters `which` selects (all by default). */
  takeCounts(which?: (id: string) => boolean): CountTaken[];
  /** Adds counts to the counters of their windows; a window already over is skipped. */
  addCounts(counts: CountTaken[]): Promise<void>;
}

export const WINDOW_MS = WINDOW_SECONDS * 1000;
export const FAILURE_LIMIT = 5;
export const FAILURE_WINDOW_MS = 15 * 60_000;
export const COOLDOWN_MS = 15 * 60_000;

/** Start of the fixed window (aligned to the wall-clock minute) that contains `now`. */
export function windowStart(now: number): number {
  return now - (now % WINDOW_MS);
}

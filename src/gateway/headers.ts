// The rate-limit headers of every response (CONTRACT section 3, "Rate-limit windows and headers";
// section 4 for /v1), in two families:
// - X-RateLimit-*: the contract's fields; X-RateLimit-Reset is the window's end in unix seconds;
// - RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers): one named policy per layer,
//   `"<bucket>";q=<limit>;w=60` and `"ip";q=100;w=60`, and per policy `r` (remaining) and `t` (seconds
//   until the window resets), so clients built for the draft read the same budget. An organization with
//   a monthly quota gets a third policy, `"month";q=<quota>;w=<seconds in the month>`, with its own
//   `r` and `t` (seconds until the month turns, UTC).
import type { Bucket } from '../config/routes.js';
import { WINDOW_MS, monthStart, windowStart, type LayerState } from '../limits/types.js';
import type { ResponseFields } from './forward.js';

const WINDOW_SECONDS = WINDOW_MS / 1000;

/** Seconds until the window of `state` resets (the draft's `t`), never negative. */
const secondsToReset = (state: LayerState, nowMs: number) => Math.max(0, Math.ceil(state.reset - nowMs / 1000));
const policy = (name: string, s: LayerState) => `"${name}";q=${s.limit};w=${WINDOW_SECONDS}`;
const current = (name: string, s: LayerState, nowMs: number) =>
  `"${name}";r=${s.remaining};t=${secondsToReset(s, nowMs)}`;
/** The month's length in seconds, from its end (the state's reset). */
const monthSeconds = (s: LayerState) => s.reset - monthStart(s.reset * 1000 - 1) / 1000;
const monthPolicy = (s: LayerState) => `, "month";q=${s.limit};w=${monthSeconds(s)}`;
const monthCurrent = (s: LayerState, nowMs: number) => `, ${current('month', s, nowMs)}`;

/** The /v2 headers: the key's bucket (when a key was resolved) and the address layer. */
export function addV2Headers(
  head: ResponseFields,
  key: LayerState | null,
  ip: LayerState | null,
  nowMs: number,
  bucket: Bucket = 'read',
  month?: LayerState,
): void {
  if (key) {
    head.push('X-RateLimit-Limit', key.limit);
    head.push('X-RateLimit-Remaining', key.remaining);
    head.push('X-RateLimit-Reset', key.reset);
  }
  if (ip) {
    head.push('X-RateLimit-IP-Limit', ip.limit);
    head.push('X-RateLimit-IP-Remaining', ip.remaining);
  }
  if (key && ip) {
    head.push('RateLimit-Policy', `${policy(bucket, key)}, ${policy('ip', ip)}${month ? monthPolicy(month) : ''}`);
    head.push(
      'RateLimit',
      `${current(bucket, key, nowMs)}, ${current('ip', ip, nowMs)}${month ? monthCurrent(month, nowMs) : ''}`,
    );
  } else if (ip) {
    head.push('RateLimit-Policy', policy('ip', ip));
    head.push('RateLimit', current('ip', ip, nowMs));
  }
}

/**
 * The three /v1 headers, on every response (CONTRACT section 4), and the draft's fields for the one
 * `"partner"` policy. Before a key is identified (401, cooldown) there is no bucket to report: the
 * headers then show an untouched bucket of the current window, since the request spent nothing.
 */
export function addV1Headers(
  head: ResponseFields,
  limit: number,
  key: LayerState | null,
  nowMs: number,
  month?: LayerState,
): void {
  const state = key ?? { limit, used: 0, remaining: limit, reset: (windowStart(nowMs) + WINDOW_MS) / 1000 };
  head.push('X-RateLimit-Limit', limit);
  head.push('X-RateLimit-Remaining', state.remaining);
  head.push('X-RateLimit-Reset', state.reset);
  head.push('RateLimit-Policy', `${policy('partner', state)}${month ? monthPolicy(month) : ''}`);
  head.push('RateLimit', `${current('partner', state, nowMs)}${month ? monthCurrent(month, nowMs) : ''}`);
}

/** Seconds until the window of `state` resets, integer, at least 1 (Retry-After). */
export function retryAfter(state: LayerState, nowMs: number): number {
  return Math.max(1, Math.ceil((state.reset * 1000 - nowMs) / 1000));
}

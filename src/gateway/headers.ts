// The rate-limit fields of every answer (docs/profiles.md, `limits.headers`; the workspace API's in
// docs/decisions.md sections 3 and 4), in two families an interface turns on or off:
// - X-RateLimit-*: X-RateLimit-Limit, -Remaining and -Reset (the window's end in unix seconds) for the
//   key's layer, X-RateLimit-IP-Limit and -IP-Remaining for the address layer;
// - RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers): one named policy per layer,
//   `"<bucket>";q=<limit>;w=60` (or the interface's one key layer, `"partner"`), `"ip";q=100;w=60`, and per
//   policy `r` (remaining) and `t` (seconds until the window resets), so clients built for the draft read
//   the same budget. An organization with a monthly quota gets a last policy,
//   `"month";q=<quota>;w=<seconds in the month>`, with its own `r` and `t` (seconds until the month
//   turns, UTC).
import type { HeaderFamilies } from '../config/profile/types.js';
import { WINDOW_MS, monthStart, windowStart, type LayerState } from '../limits/types.js';
import type { ResponseFields } from './fields.js';

const WINDOW_SECONDS = WINDOW_MS / 1000;

/** Seconds until the window of `state` resets (the draft's `t`), never negative. */
const secondsToReset = (state: LayerState, nowMs: number) => Math.max(0, Math.ceil(state.reset - nowMs / 1000));
const policy = (name: string, s: LayerState) => `"${name}";q=${s.limit};w=${WINDOW_SECONDS}`;
const current = (name: string, s: LayerState, nowMs: number) =>
  `"${name}";r=${s.remaining};t=${secondsToReset(s, nowMs)}`;
/** The month's length in seconds, from its end (the state's reset). */
const monthSeconds = (s: LayerState) => s.reset - monthStart(s.reset * 1000 - 1) / 1000;

/**
 * What the rate-limit fields of one answer report: the layers the request spent or read, each absent
 * when it has none. `key` is the key's layer under the policy name `policy` (its bucket, or the
 * interface's one layer); an answer before a key was resolved has none, or the untouched window of an
 * interface with one per-key limit. `month` is the organization's quota when it has one.
 */
export interface LimitOutcome {
  key: LayerState | null;
  policy: string;
  ip: LayerState | null;
  month?: LayerState;
}

/** The fields of an answer, whatever it is (admitted, refused, shadowed, the status route). */
export function addRateLimitFields(
  head: ResponseFields,
  families: HeaderFamilies,
  outcome: LimitOutcome,
  nowMs: number,
): void {
  const { key, ip, month } = outcome;
  if (families.xRateLimit) {
    if (key)
      head.push('X-RateLimit-Limit', key.limit, 'X-RateLimit-Remaining', key.remaining, 'X-RateLimit-Reset', key.reset);
    if (ip) head.push('X-RateLimit-IP-Limit', ip.limit, 'X-RateLimit-IP-Remaining', ip.remaining);
  }
  if (!families.ietf || (!key && !ip)) return;
  let policies = '';
  let currents = '';
  const add = (name: string, s: LayerState, q: string) => {
    policies += (policies ? ', ' : '') + q;
    currents += (currents ? ', ' : '') + current(name, s, nowMs);
  };
  if (key) add(outcome.policy, key, policy(outcome.policy, key));
  if (ip) add('ip', ip, policy('ip', ip));
  if (month) add('month', month, `"month";q=${month.limit};w=${monthSeconds(month)}`);
  head.push('RateLimit-Policy', policies, 'RateLimit', currents);
}

/**
 * The untouched window of a per-key limit: what an interface with one layer per key (/v1) reports
 * before a key is identified (401, cooldown), since the request spent nothing.
 */
export function untouchedLayer(limit: number, nowMs: number): LayerState {
  return { limit, used: 0, remaining: limit, reset: (windowStart(nowMs) + WINDOW_MS) / 1000 };
}

/** Seconds until the window of `state` resets, integer, at least 1 (Retry-After). */
export function retryAfter(state: LayerState, nowMs: number): number {
  return Math.max(1, Math.ceil((state.reset * 1000 - nowMs) / 1000));
}

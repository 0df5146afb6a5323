// The rate-limit headers of every response (docs/decisions.md section 3, "Rate-limit windows and headers";
// section 4 for /v1), in two families:
// - X-RateLimit-*: the contract's fields; X-RateLimit-Reset is the window's end in unix seconds;
// - RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers): one named policy per layer,
//   `"<bucket>";q=<limit>;w=60` and `"ip";q=100;w=60`, and per policy `r` (remaining) and `t` (seconds
//   until the window resets), so clients built for the draft read the same budget. An organization with
//   a monthly quota gets a third policy, `"month";q=<quota>;w=<seconds in the month>`, with its own
//   `r` and `t` (seconds until the month turns, UTC).
import type { Bucket } from '../config/routes.js';
import { WINDOW_MS, monthStart, windowStart, type LayerState } from '../limits/types.js';
import type { ResponseFields } from './fields.js';
import { V1_LIMIT } from '../config/contract.js';

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

/**
 * What the rate-limit fields of one answer report: the layers the request spent or read. A /v2 answer
 * before a key was resolved (steps 1 to 4) has only the address layer; `month` is the organization's
 * quota when it has one.
 */
export type LimitOutcome =
  | { api: 'v2'; ip: LayerState; key: null }
  | { api: 'v2'; ip: LayerState; key: LayerState; bucket: Bucket; month?: LayerState }
  | { api: 'v1'; key: LayerState | null; month?: LayerState };
type V2Outcome = Extract<LimitOutcome, { api: 'v2' }>;

/** The rate-limit fields of an answer, whatever it is (admitted, refused, shadowed, the status route). */
export function addRateLimitFields(head: ResponseFields, outcome: LimitOutcome, nowMs: number): void {
  if (outcome.api === 'v2') addV2Fields(head, outcome, nowMs);
  else addV1Fields(head, outcome.key, nowMs, outcome.month);
}

/** /v2: the key's bucket (when a key was resolved) and the address layer. */
function addV2Fields(head: ResponseFields, outcome: V2Outcome, nowMs: number): void {
  const { ip } = outcome;
  if (outcome.key === null) {
    head.push('X-RateLimit-IP-Limit', ip.limit);
    head.push('X-RateLimit-IP-Remaining', ip.remaining);
    head.push('RateLimit-Policy', policy('ip', ip));
    head.push('RateLimit', current('ip', ip, nowMs));
    return;
  }
  const { key, bucket, month } = outcome;
  head.push('X-RateLimit-Limit', key.limit);
  head.push('X-RateLimit-Remaining', key.remaining);
  head.push('X-RateLimit-Reset', key.reset);
  head.push('X-RateLimit-IP-Limit', ip.limit);
  head.push('X-RateLimit-IP-Remaining', ip.remaining);
  head.push('RateLimit-Policy', `${policy(bucket, key)}, ${policy('ip', ip)}${month ? monthPolicy(month) : ''}`);
  head.push(
    'RateLimit',
    `${current(bucket, key, nowMs)}, ${current('ip', ip, nowMs)}${month ? monthCurrent(month, nowMs) : ''}`,
  );
}

/**
 * /v1: the three headers, on every response (docs/decisions.md section 4), and the draft's fields for the one
 * `"partner"` policy. Before a key is identified (401, cooldown) there is no bucket to report: the
 * headers then show an untouched bucket of the current window, since the request spent nothing.
 */
function addV1Fields(head: ResponseFields, key: LayerState | null, nowMs: number, month: LayerState | undefined): void {
  const state = key ?? {
    limit: V1_LIMIT,
    used: 0,
    remaining: V1_LIMIT,
    reset: (windowStart(nowMs) + WINDOW_MS) / 1000,
  };
  head.push('X-RateLimit-Limit', V1_LIMIT);
  head.push('X-RateLimit-Remaining', state.remaining);
  head.push('X-RateLimit-Reset', state.reset);
  head.push('RateLimit-Policy', `${policy('partner', state)}${month ? monthPolicy(month) : ''}`);
  head.push('RateLimit', `${current('partner', state, nowMs)}${month ? monthCurrent(month, nowMs) : ''}`);
}

/** Seconds until the window of `state` resets, integer, at least 1 (Retry-After). */
export function retryAfter(state: LayerState, nowMs: number): number {
  return Math.max(1, Math.ceil((state.reset * 1000 - nowMs) / 1000));
}

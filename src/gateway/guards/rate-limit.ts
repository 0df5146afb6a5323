// Step 11: both rate-limit layers pass (docs/decisions.md section 3, "Rate-limit windows and headers"). The
// counters are named in src/limits/counters.ts; the access resolver spends them (or reads them for a
// refusal) in the same round trip as steps 3 and 4.
import type { Bucket } from '../../config/routes.js';
import type { LayerState } from '../../limits/types.js';
import { retryAfter } from '../headers.js';
import type { Refusal } from '../refusal.js';

const BUCKET_NAME: Record<Bucket, string> = { read: 'Read', write: 'Write', bulk: 'Bulk' };

const over = (state: LayerState) => state.used > state.limit;

/**
 * A bucketed interface (/v2, a consumer's): the spent key and address layers (null where the interface has
 * none); a refusal names the bucket, or the address when only it is over.
 */
export function rateLimitGuard(
  key: LayerState,
  ip: LayerState | null,
  bucket: Bucket,
  address: string,
  nowMs: number,
): Refusal | null {
  if (!over(key) && (ip === null || !over(ip))) return null;
  const message = over(key)
    ? `Rate limit exceeded for the ${BUCKET_NAME[bucket]} bucket.`
    : `Rate limit exceeded for IP address ${address}.`;
  return {
    code: '150005',
    message,
    retryAfter: retryAfter(over(key) || ip === null ? key : ip, nowMs),
    layer: over(key) ? 'key' : 'address',
  };
}

/**
 * The monthly quota, once every per-minute layer admitted the request: a refusal names the quota and
 * waits until the month turns (UTC).
 */
export function monthlyQuotaGuard(month: LayerState | undefined, nowMs: number): Refusal | null {
  if (month === undefined || !over(month)) return null;
  return {
    code: '150005',
    message: `Monthly request quota of ${month.limit} exhausted; it renews on ${new Date(month.reset * 1000).toISOString().slice(0, 10)} (UTC).`,
    retryAfter: retryAfter(month, nowMs),
    layer: 'month',
  };
}

/** An interface with one layer per key (/v1: 20 per key per minute). */
export function partnerRateLimitGuard(key: LayerState, nowMs: number): Refusal | null {
  if (!over(key)) return null;
  return {
    code: '150005',
    message: `Rate limit exceeded: ${key.limit} requests per minute per key.`,
    retryAfter: retryAfter(key, nowMs),
    details: { limit: key.limit, reset: key.reset },
    layer: 'key',
  };
}

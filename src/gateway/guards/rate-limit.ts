// Step 11: both rate-limit layers pass (CONTRACT section 3, "Rate-limit windows and headers"). The
// counters are named here; the access resolver spends them (or reads them for a refusal) in the same
// round trip as steps 3 and 4.
import type { Bucket } from '../../config/routes.js';
import { planOf, type Plans } from '../../config/plans.js';
import type { Principal } from '../../access/principal.js';
import type { CounterRef, LayerState } from '../../limits/types.js';
import { addressKey } from '../../limits/address.js';
import { retryAfter } from '../headers.js';
import type { Refusal } from '../refusals.js';

export const IP_LIMIT = 100;
export const V1_LIMIT = 20;
export const BUCKETS: readonly Bucket[] = ['read', 'write', 'bulk'];
const BUCKET_NAME: Record<Bucket, string> = { read: 'Read', write: 'Write', bulk: 'Bulk' };

export function keyCounter(principal: Principal, bucket: Bucket, plans: Plans): CounterRef {
  return { id: `k:${principal.keyId}:${bucket}`, limit: planOf(plans, principal.plan).plan[bucket] };
}
// Counted per client as the cooldown is: an IPv6 client per /64 (src/limits/address.ts).
export const ipCounter = (ip: string): CounterRef => ({ id: `ip:${addressKey(ip)}`, limit: IP_LIMIT });
export const partnerCounter = (principal: Principal): CounterRef => ({ id: `v1:${principal.keyId}`, limit: V1_LIMIT });

const over = (state: LayerState) => state.used > state.limit;

/** /v2: the spent key and address layers; a refusal names the bucket, or the address when only it is over. */
export function rateLimitGuard(key: LayerState, ip: LayerState, bucket: Bucket, address: string, nowMs: number): Refusal | null {
  if (!over(key) && !over(ip)) return null;
  const message = over(key) ? `Rate limit exceeded for the ${BUCKET_NAME[bucket]} bucket.` : `Rate limit exceeded for IP address ${address}.`;
  return { code: '150005', message, retryAfter: retryAfter(over(key) ? key : ip, nowMs) };
}

/** /v1: one layer of 20 per key per minute. */
export function partnerRateLimitGuard(key: LayerState, nowMs: number): Refusal | null {
  if (!over(key)) return null;
  return { code: '150005', message: 'Rate limit exceeded: 20 requests per minute per key.', retryAfter: retryAfter(key, nowMs), details: { limit: V1_LIMIT, reset: key.reset } };
}

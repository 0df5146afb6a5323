// The counters' names, one home for every reader and writer: the gateway spends them, the admin API and
// the CLI read them (a key's traffic, its remaining budget), `limits replay` recounts them. A counter
// named twice would be two counters.
import type { Bucket } from '../config/routes.js';
import { IP_LIMIT, V1_LIMIT } from '../config/contract.js';
import type { CounterRef } from './types.js';
import { addressKey } from '../http/address.js';

export const BUCKETS: readonly Bucket[] = ['read', 'write', 'bulk'];

/** A key's counter of one bucket, at its budget (the key's override, its organization's, or the plan's). */
export const keyCounter = (keyId: number, bucket: Bucket, budget: number): CounterRef => ({
  id: `k:${keyId}:${bucket}`,
  limit: budget,
});
/** An organization's monthly quota counter, or undefined when it has no quota (nothing changes then). */
export const monthCounter = (organizationId: number, quota: number | null): CounterRef | undefined =>
  quota === null ? undefined : { id: `m:${organizationId}`, limit: quota, month: true };
// Counted per client as the cooldown is: an IPv6 client per /64 (src/http/address.ts).
export const ipCounter = (ip: string, limit: number = IP_LIMIT): CounterRef => ({ id: `ip:${addressKey(ip)}`, limit });
/** A key's one counter on an interface without buckets (the workspace API's /v1: 20 a minute). */
export const partnerCounter = (keyId: number, limit: number = V1_LIMIT): CounterRef => ({ id: `v1:${keyId}`, limit });

// Which budget applies: a key's override, else its organization's, else the plan's, per per-minute
// bucket; and the organization's monthly quota (its override, else the plan's `monthlyQuota`, or none).
// The principal carries the overrides (read with the key), so a change reaches every gateway with the
// organization's access version, on the next request, like a plan change.
import { planOf, type Plans } from './plans.js';
import type { Bucket } from './routes.js';

export interface LimitOverrides {
  read: number | null;
  write: number | null;
  bulk: number | null;
  /** The organization's own quota; null is the plan's, 'off' none even if the plan has one. */
  monthlyQuota: number | 'off' | null;
  /** Which layer each overridden budget came from (absent: the plan's). */
  sources?: Partial<Record<Bucket, BudgetSource>>;
}

/** Where a budget came from, for the rate-limit reports. */
export type BudgetSource = 'key' | 'organization' | 'plan';

// Nearly every principal has no override: they share one frozen object (10,000 cached principals).
const NO_OVERRIDES: LimitOverrides = Object.freeze({ read: null, write: null, bulk: null, monthlyQuota: null });
const KEY_FIRST: readonly (readonly [Bucket, string, string])[] = [
  ['read', 'k_read', 'o_read'],
  ['write', 'k_write', 'o_write'],
  ['bulk', 'k_bulk', 'o_bulk'],
];

/** The overrides of a principal's row (the key's columns k_*, the organization's o_* and its quota). */
export function limitOverridesOf(row: Record<string, unknown>): LimitOverrides {
  const quota = row.monthly_quota_off ? 'off' : row.monthly_quota == null ? null : Number(row.monthly_quota);
  let out: LimitOverrides | null = null;
  for (const [bucket, k, o] of KEY_FIRST) {
    const v = row[k] ?? row[o];
    if (v != null) (out ??= { ...NO_OVERRIDES })[bucket] = Number(v);
  }
  if (quota !== null) (out ??= { ...NO_OVERRIDES }).monthlyQuota = quota;
  if (out === null) return NO_OVERRIDES;
  // Which layer each budget came from, for the reports; kept off the shared object.
  const sources: Partial<Record<Bucket, BudgetSource>> = {};
  for (const [bucket, k, o] of KEY_FIRST)
    if (row[k] != null) sources[bucket] = 'key';
    else if (row[o] != null) sources[bucket] = 'organization';
  return Object.freeze({ ...out, sources });
}

/** The per-minute budget of one bucket. */
export function budgetOf(plans: Plans, plan: string | null, overrides: LimitOverrides, bucket: Bucket): number {
  return overrides[bucket] ?? planOf(plans, plan).plan[bucket];
}

/** Where the budget of `bucket` comes from. */
export function budgetSource(overrides: LimitOverrides, bucket: Bucket): BudgetSource {
  return overrides.sources?.[bucket] ?? 'plan';
}

/** The organization's monthly quota, or null when it has none. */
export function monthlyQuotaOf(plans: Plans, plan: string | null, overrides: LimitOverrides): number | null {
  if (overrides.monthlyQuota === 'off') return null;
  return overrides.monthlyQuota ?? planOf(plans, plan).plan.monthlyQuota ?? null;
}

// Per-customer limits: the overrides of the per-minute budgets of one organization or one key, and an
// organization's monthly quota. The one place they change (the CLI, the backend's internal route and
// the admin API only parse and format around these): validate, write with the audit row in one
// transaction, then bump the organization's access version, so every gateway applies the change on its
// next request (the principal carries the budgets).
import type { Queryable, Row } from '../../db/types.js';
import { planOf, type Plans } from '../../config/plans.js';
import { budgetOf, limitOverridesOf, monthlyQuotaOf, type LimitOverrides } from '../../config/budgets.js';
import { BUCKETS } from '../../limits/counters.js';
import { recordAudit } from './audit.js';
import { ServiceError, type ServiceContext } from './context.js';
import { limitsChanged } from '../events/service-events.js';
import { keyLimitsRow, organizationLimitsRow, updateLimits } from './queries.js';

/** A change: a number sets, null clears (back to the layer above); absent keeps. */
export interface LimitsChange {
  read?: number | null;
  write?: number | null;
  bulk?: number | null;
  /** Organizations only: a number sets, 'none' removes the plan's quota, null clears (the plan's). */
  monthlyQuota?: number | 'none' | null;
}

export const MAX_BUDGET = 1_000_000_000;
export const MAX_MONTHLY_QUOTA = 1_000_000_000_000;

/** Refuses a change that names nothing, a budget that is not a positive integer, or a quota on a key. */
export function checkLimitsChange(change: LimitsChange, forKey: boolean): void {
  const known = forKey ? ['read', 'write', 'bulk'] : ['read', 'write', 'bulk', 'monthlyQuota'];
  const unknown = Object.keys(change).find((f) => !known.includes(f));
  if (unknown === 'monthlyQuota')
    throw new ServiceError(
      'invalid',
      'a monthly quota is set per organization, not per key',
      'monthlyQuota',
      'monthlyQuota',
    );
  if (unknown !== undefined)
    throw new ServiceError('invalid', `unknown limit ${JSON.stringify(unknown)}`, unknown, unknown);
  if (Object.keys(change).length === 0)
    throw new ServiceError('invalid', 'nothing to change: give read, write, bulk or monthlyQuota, or clear', 'empty');
  for (const b of BUCKETS) {
    const v = change[b];
    if (v !== undefined && v !== null && !(Number.isInteger(v) && v >= 1 && v <= MAX_BUDGET)) {
      throw new ServiceError(
        'invalid',
        `${b} must be an integer from 1 to ${MAX_BUDGET} (requests per minute), or null to use the plan's`,
        b,
        b,
      );
    }
  }
  const q = change.monthlyQuota;
  if (q !== undefined && q !== null && q !== 'none' && !(Number.isInteger(q) && q >= 1 && q <= MAX_MONTHLY_QUOTA)) {
    throw new ServiceError(
      'invalid',
      `monthlyQuota must be an integer from 1 to ${MAX_MONTHLY_QUOTA}, "none", or null to use the plan's`,
      'monthlyQuota',
      'monthlyQuota',
    );
  }
}

/** Every field back to the layer above. */
export const CLEAR_ALL: LimitsChange = { read: null, write: null, bulk: null };

export interface LimitsView {
  organizationId: number;
  keyId?: number;
  plan: string;
  /** What this organization or key sets itself (null: the layer above). */
  overrides: { read: number | null; write: number | null; bulk: number | null; monthlyQuota?: number | 'none' | null };
  /** What the gateways apply now. */
  effective: { read: number; write: number; bulk: number; monthlyQuota: number | null };
}

function view(plans: Plans, row: Row, keyId?: number): LimitsView {
  const overrides: LimitOverrides = limitOverridesOf(row);
  const own = (b: string) => (row[`${keyId === undefined ? 'o' : 'k'}_${b}`] ?? null) as number | null;
  const quota = monthlyQuotaOf(plans, row.plan, overrides);
  return {
    organizationId: row.organization_id,
    ...(keyId === undefined ? {} : { keyId }),
    plan: planOf(plans, row.plan).id,
    overrides: {
      read: own('read'),
      write: own('write'),
      bulk: own('bulk'),
      ...(keyId === undefined
        ? {
            monthlyQuota: row.monthly_quota_off ? 'none' : row.monthly_quota == null ? null : Number(row.monthly_quota),
          }
        : {}),
    },
    effective: {
      read: budgetOf(plans, row.plan, overrides, 'read'),
      write: budgetOf(plans, row.plan, overrides, 'write'),
      bulk: budgetOf(plans, row.plan, overrides, 'bulk'),
      monthlyQuota: quota,
    },
  };
}

/** The row read, or the refusal naming what is missing. */
function found(row: Row | undefined, id: number, what: 'organization' | 'key'): Row {
  if (!row) throw new ServiceError('not_found', `no ${what} ${id}`, what === 'key' ? 'no_key' : 'no_organization');
  return row;
}

export async function getOrganizationLimits(
  ctx: Pick<ServiceContext, 'db' | 'plans'>,
  orgId: number,
): Promise<LimitsView> {
  return view(ctx.plans(), found(await organizationLimitsRow(ctx.db, orgId), orgId, 'organization'));
}

export async function getKeyLimits(ctx: Pick<ServiceContext, 'db' | 'plans'>, keyId: number): Promise<LimitsView> {
  return view(ctx.plans(), found(await keyLimitsRow(ctx.db, keyId), keyId, 'key'), keyId);
}

/** An organization's limits as `q` (a change's transaction) reads them. */
export async function organizationLimitsIn(q: Queryable, plans: Plans, orgId: number): Promise<LimitsView> {
  return view(plans, found(await organizationLimitsRow(q, orgId), orgId, 'organization'));
}

/** Change an organization's overrides and monthly quota. */
export async function setOrganizationLimits(
  ctx: ServiceContext,
  orgId: number,
  change: LimitsChange,
): Promise<LimitsView> {
  checkLimitsChange(change, false);
  const plans = ctx.plans();
  const after = await ctx.db.tx(async (q) => {
    const before = view(plans, found(await organizationLimitsRow(q, orgId, true), orgId, 'organization'));
    await updateLimits(q, 'organizations', orgId, change);
    const updated = view(plans, found(await organizationLimitsRow(q, orgId), orgId, 'organization'));
    await recordAudit(q, ctx, {
      action: 'organization.limits',
      targetType: 'organization',
      targetIds: [orgId],
      organizationId: orgId,
      before: before.overrides,
      after: updated.overrides,
    });
    await limitsChanged(q, ctx, before, updated);
    return updated;
  });
  await ctx.accessChanged(orgId);
  return after;
}

/** Change one key's overrides of the per-minute budgets. */
export async function setKeyLimits(ctx: ServiceContext, keyId: number, change: LimitsChange): Promise<LimitsView> {
  checkLimitsChange(change, true);
  const plans = ctx.plans();
  const after = await ctx.db.tx(async (q) => {
    const before = view(plans, found(await keyLimitsRow(q, keyId, true), keyId, 'key'), keyId);
    await updateLimits(q, 'api_keys', keyId, change);
    const updated = view(plans, found(await keyLimitsRow(q, keyId), keyId, 'key'), keyId);
    await recordAudit(q, ctx, {
      action: 'key.limits',
      targetType: 'key',
      targetIds: [keyId],
      organizationId: updated.organizationId,
      before: before.overrides,
      after: updated.overrides,
    });
    await limitsChanged(q, ctx, before, updated);
    return updated;
  });
  await ctx.accessChanged(after.organizationId);
  return after;
}

// Per-customer limits: the overrides of the per-minute budgets of one organization or one key, and an
// organization's monthly quota. The one place they change (the CLI and the backend's internal route
// only parse and format around these): validate, write, then bump the organization's access version,
// so every gateway applies the change on its next request (the principal carries the budgets).
import type { Db, Queryable } from '../../db/types.js';
import { planOf, type Plans } from '../../config/plans.js';
import { budgetOf, limitOverridesOf, monthlyQuotaOf, type LimitOverrides } from '../../limits/budgets.js';
import type { Bucket } from '../../config/routes.js';

const BUCKETS: readonly Bucket[] = ['read', 'write', 'bulk'];

export interface LimitsContext {
  db: Db;
  plans(): Plans;
  /** After committing: the organization's access version is bumped (running gateways re-resolve). */
  accessChanged(orgId: number): Promise<void>;
}

/** A change: a number sets, null clears (back to the layer above); absent keeps. */
export interface LimitsChange {
  read?: number | null;
  write?: number | null;
  bulk?: number | null;
  /** Organizations only: a number sets, 'none' removes the plan's quota, null clears (the plan's). */
  monthlyQuota?: number | 'none' | null;
}

export class LimitsError extends Error {
  constructor(
    public kind: 'not_found' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

export const MAX_BUDGET = 1_000_000_000;
export const MAX_MONTHLY_QUOTA = 1_000_000_000_000;

function check(change: LimitsChange, forKey: boolean): void {
  if (Object.keys(change).length === 0) throw new LimitsError('invalid', 'nothing to change: give read, write, bulk or monthlyQuota, or clear');
  for (const b of BUCKETS) {
    const v = change[b];
    if (v !== undefined && v !== null && !(Number.isInteger(v) && v >= 1 && v <= MAX_BUDGET)) {
      throw new LimitsError('invalid', `${b} must be an integer from 1 to ${MAX_BUDGET} (requests per minute), or null to use the plan's`);
    }
  }
  const q = change.monthlyQuota;
  if (q !== undefined) {
    if (forKey) throw new LimitsError('invalid', 'a monthly quota is set per organization, not per key');
    if (q !== null && q !== 'none' && !(Number.isInteger(q) && q >= 1 && q <= MAX_MONTHLY_QUOTA)) {
      throw new LimitsError('invalid', `monthlyQuota must be an integer from 1 to ${MAX_MONTHLY_QUOTA}, "none", or null to use the plan's`);
    }
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

const ORG_ROW = `SELECT o.id AS organization_id, o.plan, o.limit_read AS o_read, o.limit_write AS o_write, o.limit_bulk AS o_bulk,
                        o.monthly_quota, o.monthly_quota_off FROM organizations o WHERE o.id = $1`;
const KEY_ROW = `SELECT k.id AS key_id, k.organization_id, o.plan, k.limit_read AS k_read, k.limit_write AS k_write, k.limit_bulk AS k_bulk,
                        o.limit_read AS o_read, o.limit_write AS o_write, o.limit_bulk AS o_bulk, o.monthly_quota, o.monthly_quota_off
                   FROM api_keys k JOIN organizations o ON o.id = k.organization_id WHERE k.id = $1`;

function view(plans: Plans, row: Record<string, any>, keyId?: number): LimitsView {
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
      ...(keyId === undefined ? { monthlyQuota: row.monthly_quota_off ? 'none' : row.monthly_quota == null ? null : Number(row.monthly_quota) } : {}),
    },
    effective: {
      read: budgetOf(plans, row.plan, overrides, 'read'),
      write: budgetOf(plans, row.plan, overrides, 'write'),
      bulk: budgetOf(plans, row.plan, overrides, 'bulk'),
      monthlyQuota: quota,
    },
  };
}

async function one(q: Queryable, sql: string, id: number, what: string): Promise<Record<string, any>> {
  const rows = await q.query(sql, [id]);
  if (!rows.length) throw new LimitsError('not_found', `no ${what} ${id}`);
  return rows[0];
}

export async function getOrganizationLimits(ctx: LimitsContext, orgId: number): Promise<LimitsView> {
  return view(ctx.plans(), await one(ctx.db, ORG_ROW, orgId, 'organization'));
}

export async function getKeyLimits(ctx: LimitsContext, keyId: number): Promise<LimitsView> {
  return view(ctx.plans(), await one(ctx.db, KEY_ROW, keyId, 'key'), keyId);
}

/** Columns of one change, for an UPDATE ... SET. */
function assignments(change: LimitsChange, params: unknown[]): string[] {
  const set: string[] = [];
  for (const b of BUCKETS) {
    if (change[b] === undefined) continue;
    params.push(change[b]);
    set.push(`limit_${b} = $${params.length}`);
  }
  if (change.monthlyQuota !== undefined) {
    params.push(typeof change.monthlyQuota === 'number' ? change.monthlyQuota : null);
    set.push(`monthly_quota = $${params.length}`, `monthly_quota_off = ${change.monthlyQuota === 'none'}`);
  }
  return set;
}

/** Change an organization's overrides (`queryable`: an open transaction to join, e.g. the internal PATCH's). */
export async function setOrganizationLimits(ctx: LimitsContext, orgId: number, change: LimitsChange, queryable?: Queryable): Promise<LimitsView> {
  check(change, false);
  const write = async (q: Queryable) => {
    await one(q, `${ORG_ROW} FOR UPDATE`, orgId, 'organization');
    const params: unknown[] = [orgId];
    await q.query(`UPDATE organizations SET ${assignments(change, params).join(', ')} WHERE id = $1`, params);
    return one(q, ORG_ROW, orgId, 'organization');
  };
  const row = queryable ? await write(queryable) : await ctx.db.tx(write);
  if (!queryable) await ctx.accessChanged(orgId);
  return view(ctx.plans(), row);
}

/** Change one key's overrides of the per-minute budgets. */
export async function setKeyLimits(ctx: LimitsContext, keyId: number, change: LimitsChange): Promise<LimitsView> {
  check(change, true);
  const row = await ctx.db.tx(async (q) => {
    await one(q, `SELECT id FROM api_keys WHERE id = $1 FOR UPDATE`, keyId, 'key');
    const params: unknown[] = [keyId];
    await q.query(`UPDATE api_keys SET ${assignments(change, params).join(', ')} WHERE id = $1`, params);
    return one(q, KEY_ROW, keyId, 'key');
  });
  await ctx.accessChanged(row.organization_id);
  return view(ctx.plans(), row, keyId);
}

// Per-workspace daily warmup budgets against the organization's cap (spec, Workspace budgets).
// Every writer of budgets locks the organization row first (SELECT ... FOR UPDATE), so the check of the
// sum and the write are one step: concurrent requests can never together take the sum over the cap.
import { ApiError } from '../../http/errors.js';
import type { Queryable } from '../../db/types.js';

export interface OrgBudget {
  orgLimit: number | null;
  /** Live workspaces of the organization, by id, with their budgets. */
  workspaces: { workspaceId: number; name: string; dailyWarmupBudget: number }[];
}

export function allocatedOf(b: OrgBudget): number {
  return b.workspaces.reduce((s, w) => s + w.dailyWarmupBudget, 0);
}

export function quotasView(b: OrgBudget) {
  const allocated = allocatedOf(b);
  return {
    orgLimit: b.orgLimit,
    allocated,
    // null with an unlimited cap; never negative (a cap lowered below the allocation shows 0).
    available: b.orgLimit === null ? null : Math.max(0, b.orgLimit - allocated),
    workspaces: b.workspaces,
  };
}

/** Read the cap and the live workspaces; with `lock`, hold the organization row until the transaction ends. */
export async function readOrgBudget(q: Queryable, organizationId: number, lock: boolean): Promise<OrgBudget> {
  const orgs = await q.query(`SELECT warmup_cap FROM organizations WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [organizationId]);
  if (!orgs.length) throw new ApiError('not_found', `No organization ${organizationId}.`);
  const ws = await q.query(
    `SELECT id, name, daily_warmup_budget FROM workspaces WHERE organization_id = $1 AND deleted_at IS NULL ORDER BY id`,
    [organizationId],
  );
  return {
    orgLimit: orgs[0].warmup_cap,
    workspaces: ws.map((w) => ({ workspaceId: w.id, name: w.name, dailyWarmupBudget: w.daily_warmup_budget })),
  };
}

/**
 * Refuse an allocation whose new sum exceeds the cap. A request that does not raise the sum is always
 * accepted, so an organization whose cap was lowered below its allocation can still shrink budgets.
 */
export function assertWithinCap(b: OrgBudget, newAllocated: number): void {
  const allocated = allocatedOf(b);
  if (b.orgLimit !== null && newAllocated > b.orgLimit && newAllocated > allocated) {
    throw new ApiError(
      'quota_exceeds_org_limit',
      `The budgets would total ${newAllocated}, over the organization's daily warmup cap of ${b.orgLimit}.`,
      { orgLimit: b.orgLimit, allocated, requested: newAllocated },
    );
  }
}

/** Apply a set of budgets in the caller's transaction: one check across the whole request, then the writes. */
export async function setBudgets(q: Queryable, organizationId: number, quotas: { workspaceId: number; dailyWarmupBudget: number }[]): Promise<OrgBudget> {
  const b = await readOrgBudget(q, organizationId, true);
  const live = new Map(b.workspaces.map((w) => [w.workspaceId, w]));
  const unknown = quotas.map((x) => x.workspaceId).filter((id) => !live.has(id));
  if (unknown.length) {
    throw new ApiError('invalid_request', `quotas: no live workspace of this organization with id ${unknown.join(', ')}.`, {
      field: 'quotas',
      workspaceIds: unknown,
    });
  }
  const next = new Map(quotas.map((x) => [x.workspaceId, x.dailyWarmupBudget]));
  const newAllocated = b.workspaces.reduce((s, w) => s + (next.get(w.workspaceId) ?? w.dailyWarmupBudget), 0);
  assertWithinCap(b, newAllocated);
  for (const x of quotas) {
    await q.query(`UPDATE workspaces SET daily_warmup_budget = $3 WHERE id = $1 AND organization_id = $2`, [x.workspaceId, organizationId, x.dailyWarmupBudget]);
  }
  return { orgLimit: b.orgLimit, workspaces: b.workspaces.map((w) => ({ ...w, dailyWarmupBudget: next.get(w.workspaceId) ?? w.dailyWarmupBudget })) };
}

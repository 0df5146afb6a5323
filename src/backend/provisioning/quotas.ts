// Per-workspace daily warmup budgets against the organization's cap (spec, Workspace budgets).
// Every writer of budgets locks the organization row first (SELECT ... FOR UPDATE), so the check of the
// sum and the write are one step: concurrent requests can never together take the sum over the cap.
import { ApiError } from '../../http/errors.js';
import type { Queryable } from '../../db/types.js';
import { liveWorkspaceBudgets, orgWarmupCap, updateWorkspaceBudget, type WorkspaceBudget } from './queries.js';

export interface OrgBudget {
  orgLimit: number | null;
  /** Live workspaces of the organization, by id, with their budgets. */
  workspaces: WorkspaceBudget[];
}

export function allocatedOf(budget: OrgBudget): number {
  return budget.workspaces.reduce((s, w) => s + w.dailyWarmupBudget, 0);
}

export function quotasView(budget: OrgBudget) {
  const allocated = allocatedOf(budget);
  return {
    orgLimit: budget.orgLimit,
    allocated,
    // null with an unlimited cap; never negative (a cap lowered below the allocation shows 0).
    available: budget.orgLimit === null ? null : Math.max(0, budget.orgLimit - allocated),
    workspaces: budget.workspaces,
  };
}

/** Read the cap and the live workspaces; with `lock`, hold the organization row until the transaction ends. */
export async function readOrgBudget(db: Queryable, organizationId: number, lock: boolean): Promise<OrgBudget> {
  const org = await orgWarmupCap(db, organizationId, lock);
  if (!org) throw new ApiError('not_found', `No organization ${organizationId}.`);
  return { orgLimit: org.warmupCap, workspaces: await liveWorkspaceBudgets(db, organizationId) };
}

/**
 * Refuse an allocation whose new sum exceeds the cap. A request that does not raise the sum is always
 * accepted, so an organization whose cap was lowered below its allocation can still shrink budgets.
 */
export function assertWithinCap(budget: OrgBudget, newAllocated: number): void {
  const allocated = allocatedOf(budget);
  if (budget.orgLimit !== null && newAllocated > budget.orgLimit && newAllocated > allocated) {
    throw new ApiError(
      'quota_exceeds_org_limit',
      `The budgets would total ${newAllocated}, over the organization's daily warmup cap of ${budget.orgLimit}.`,
      { orgLimit: budget.orgLimit, allocated, requested: newAllocated },
    );
  }
}

/** Apply a set of budgets in the caller's transaction: one check across the whole request, then the writes. */
export async function setBudgets(
  db: Queryable,
  organizationId: number,
  quotas: { workspaceId: number; dailyWarmupBudget: number }[],
): Promise<OrgBudget> {
  const budget = await readOrgBudget(db, organizationId, true);
  const live = new Map(budget.workspaces.map((w) => [w.workspaceId, w]));
  const unknown = quotas.map((x) => x.workspaceId).filter((id) => !live.has(id));
  if (unknown.length) {
    throw new ApiError(
      'invalid_request',
      `quotas: no live workspace of this organization with id ${unknown.join(', ')}.`,
      {
        field: 'quotas',
        workspaceIds: unknown,
      },
    );
  }
  const next = new Map(quotas.map((x) => [x.workspaceId, x.dailyWarmupBudget]));
  const newAllocated = budget.workspaces.reduce((s, w) => s + (next.get(w.workspaceId) ?? w.dailyWarmupBudget), 0);
  assertWithinCap(budget, newAllocated);
  for (const quota of quotas) {
    await updateWorkspaceBudget(db, organizationId, quota.workspaceId, quota.dailyWarmupBudget);
  }
  return {
    orgLimit: budget.orgLimit,
    workspaces: budget.workspaces.map((w) => ({
      ...w,
      dailyWarmupBudget: next.get(w.workspaceId) ?? w.dailyWarmupBudget,
    })),
  };
}

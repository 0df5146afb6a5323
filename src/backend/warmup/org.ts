// The organization behind a workspace or an account: its plan's caps, locked so capacity checks and
// plan changes serialize (lock order everywhere: organization row, then account rows).
import { ApiError } from '../../http/errors.js';
import { planOf, type Plan } from '../../config/plans.js';
import type { Queryable } from '../../db/index.js';
import type { BackendServices } from '../services.js';
import { organizationOfAccount, organizationOfWorkspace, warmingCount, type OrgLock, type OrgRow } from './queries.js';

export interface OrgPlan {
  orgId: number;
  planId: string;
  plan: Plan;
}

function orgPlanOf(svc: BackendServices, org: OrgRow | null): OrgPlan | null {
  if (!org) return null;
  const plan = planOf(svc.plans(), org.plan);
  return { orgId: org.id, planId: plan.id, plan: plan.plan };
}

export async function orgOfWorkspace(
  svc: BackendServices,
  db: Queryable,
  workspaceId: number,
  lock: OrgLock = 'none',
): Promise<OrgPlan> {
  const org = orgPlanOf(svc, await organizationOfWorkspace(db, workspaceId, lock));
  if (!org) throw new ApiError('not_found', 'No such workspace.');
  return org;
}

export async function orgOfAccount(
  svc: BackendServices,
  db: Queryable,
  accountId: number,
  lock: OrgLock = 'none',
): Promise<OrgPlan | null> {
  return orgPlanOf(svc, await organizationOfAccount(db, accountId, lock));
}

/** Room for one more warming mailbox under the plan's warmingMailboxCap (null: no cap). */
export async function capacityLeft(
  db: Queryable,
  org: OrgPlan,
): Promise<{ ok: boolean; cap: number | null; warming: number }> {
  const cap = org.plan.warmingMailboxCap;
  const warming = await warmingCount(db, org.orgId);
  return { ok: cap === null || warming < cap, cap, warming };
}

export function capacityError(org: OrgPlan, cap: number, warming: number): ApiError {
  return new ApiError(
    'warming_capacity_reached',
    `The ${org.plan.label} plan allows ${cap} warming mailboxes at once; ${warming} are warming. Pause one or upgrade.`,
    {
      warmingMailboxCap: cap,
      warming,
      plan: org.planId,
    },
  );
}

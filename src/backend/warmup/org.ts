// The organization behind a workspace or an account: its plan's caps, locked so capacity checks and
// plan changes serialize (lock order everywhere: organization row, then account rows).
import { ApiError } from '../../http/errors.js';
import { planOf, type Plan } from '../../config/plans.js';
import type { Queryable } from '../../db/index.js';
import type { BackendServices } from '../services.js';

export interface OrgPlan {
  orgId: number;
  planId: string;
  plan: Plan;
}

type Lock = 'none' | 'share' | 'update';
const LOCK_SQL: Record<Lock, string> = { none: '', share: 'FOR SHARE OF o', update: 'FOR UPDATE OF o' };

async function orgBy(
  svc: BackendServices,
  db: Queryable,
  sql: string,
  id: number,
  lock: Lock,
): Promise<OrgPlan | null> {
  const rows = await db.query(`${sql} ${LOCK_SQL[lock]}`, [id]);
  if (!rows.length) return null;
  const plan = planOf(svc.plans(), rows[0].plan);
  return { orgId: rows[0].id, planId: plan.id, plan: plan.plan };
}

export async function orgOfWorkspace(
  svc: BackendServices,
  db: Queryable,
  workspaceId: number,
  lock: Lock = 'none',
): Promise<OrgPlan> {
  const org = await orgBy(
    svc,
    db,
    `SELECT o.id, o.plan FROM organizations o JOIN workspaces w ON w.organization_id = o.id WHERE w.id = $1`,
    workspaceId,
    lock,
  );
  if (!org) throw new ApiError('not_found', 'No such workspace.');
  return org;
}

export async function orgOfAccount(
  svc: BackendServices,
  db: Queryable,
  accountId: number,
  lock: Lock = 'none',
): Promise<OrgPlan | null> {
  return orgBy(
    svc,
    db,
    `SELECT o.id, o.plan FROM organizations o JOIN workspaces w ON w.organization_id = o.id
    JOIN accounts a ON a.workspace_id = w.id WHERE a.id = $1`,
    accountId,
    lock,
  );
}

/** Mailboxes warming now across the organization's live workspaces. */
export async function warmingCount(db: Queryable, orgId: number): Promise<number> {
  const rows = await db.query(
    `SELECT count(*)::int AS n FROM accounts a JOIN workspaces w ON w.id = a.workspace_id
    WHERE w.organization_id = $1 AND w.deleted_at IS NULL AND a.status = 'warming'`,
    [orgId],
  );
  return rows[0].n;
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

// What a plan change does to the organization's mailboxes (spec, States: "Daily limit"): none may stay
// above the new plan's per-mailbox cap. It runs in the plan change's transaction (organizations.ts);
// the backend's warmup rules then read the limits it leaves, so it lives here, below both.
import type { Queryable } from '../../db/types.js';

/**
 * Inside the caller's transaction (the plan change), lower at once every mailbox of the organization
 * whose max, current or pending limit is above the new per-mailbox cap; a pending max that would no
 * longer be below the new max is dropped. `cap` null (no cap) changes nothing. Returns how many
 * mailboxes changed.
 */
export async function applyPlanCap(db: Queryable, orgId: number, cap: number | null): Promise<number> {
  if (cap === null) return 0;
  if (!Number.isInteger(cap) || cap < 5)
    throw new Error(`applyPlanCap: cap must be an integer >= 5 or null, got ${cap}`);
  const rows = await db.query(
    `UPDATE accounts a SET
       warmup_max_limit = LEAST(a.warmup_max_limit, $2),
       warmup_current_limit = LEAST(a.warmup_current_limit, $2),
       pending_max_limit = CASE WHEN a.pending_max_limit < LEAST(a.warmup_max_limit, $2) THEN a.pending_max_limit END,
       pending_effective_at = CASE WHEN a.pending_max_limit < LEAST(a.warmup_max_limit, $2) THEN a.pending_effective_at END,
       updated_at = now()
     FROM workspaces w
     WHERE w.id = a.workspace_id AND w.organization_id = $1
       AND (a.warmup_max_limit > $2 OR a.warmup_current_limit > $2 OR a.pending_max_limit > $2)
     RETURNING a.id`,
    [orgId, cap],
  );
  return rows.length;
}

// A plan change lowers every mailbox above the new plan's per-mailbox cap at once, current limit
// and pending limit included (spec, States: "sending drops to the cap immediately").
import type { Queryable } from '../../db/types.js';

/** Inside the caller's transaction; returns how many mailboxes were lowered. A null cap lowers none. */
export async function applyPlanCap(q: Queryable, orgId: number, cap: number | null): Promise<number> {
  if (cap === null) return 0;
  const rows = await q.query(
    `UPDATE accounts a SET
        warmup_max_limit = LEAST(a.warmup_max_limit, $2),
        warmup_current_limit = LEAST(a.warmup_current_limit, $2),
        pending_max_limit = CASE WHEN a.pending_max_limit IS NULL THEN NULL ELSE LEAST(a.pending_max_limit, $2) END,
        updated_at = now()
       FROM workspaces w
      WHERE w.id = a.workspace_id AND w.organization_id = $1
        AND (a.warmup_max_limit > $2 OR a.warmup_current_limit > $2 OR a.pending_max_limit > $2)
      RETURNING a.id`,
    [orgId, cap],
  );
  return rows.length;
}

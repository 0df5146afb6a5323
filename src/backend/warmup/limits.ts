// Daily limits: a lowered warmupMaxLimit waits for the mailbox's next local midnight; a plan change
// lowers every mailbox above the new cap at once (spec, States: "Daily limit").
import type { Queryable } from '../../db/index.js';
import { settleDueLimits } from '../mailbox/queries.js';

/** The first instant of the next local day in `timeZone` after `now` (PostgreSQL's tz database, DST-aware). */
export async function nextLocalMidnight(db: Queryable, now: Date, timeZone: string): Promise<Date> {
  const rows = await db.query(
    `SELECT (date_trunc('day', $1::timestamptz AT TIME ZONE $2) + interval '1 day') AT TIME ZONE $2 AS at`,
    [now, timeZone],
  );
  return rows[0].at as Date;
}

/** The job's work: every pending lowered max whose local midnight has come takes effect. */
export async function applyDueLimits(db: Queryable, now: Date): Promise<number[]> {
  return settleDueLimits(db, now);
}

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

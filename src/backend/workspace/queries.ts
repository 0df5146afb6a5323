// The SQL of the workspace routes: every query is scoped by the path workspace and the caller's
// organization (a soft-deleted workspace names nothing). The member queries are in members.ts.
import type { Queryable, Row } from '../../db/types.js';

/** The live workspace of the organization, or null. */
export async function findLiveWorkspace(
  db: Queryable,
  workspaceId: number,
  organizationId: number,
): Promise<Row | null> {
  const rows = await db.query(
    `SELECT id, organization_id, name, daily_warmup_budget, created_at FROM workspaces
      WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`,
    [workspaceId, organizationId],
  );
  return rows[0] ?? null;
}

/** Renames a live workspace of the organization; false when there is none. */
export async function renameWorkspace(
  db: Queryable,
  workspaceId: number,
  organizationId: number,
  name: string,
): Promise<boolean> {
  const rows = await db.query(
    `UPDATE workspaces SET name = $2 WHERE id = $1 AND organization_id = $3 AND deleted_at IS NULL RETURNING id`,
    [workspaceId, name, organizationId],
  );
  return rows.length > 0;
}

export async function countMembersAndAccounts(
  db: Queryable,
  workspaceId: number,
): Promise<{ members: number; accounts: number }> {
  const [counts] = await db.query(
    `SELECT (SELECT count(*)::int FROM memberships WHERE workspace_id = $1) AS members,
            (SELECT count(*)::int FROM accounts WHERE workspace_id = $1) AS accounts`,
    [workspaceId],
  );
  return { members: counts.members, accounts: counts.accounts };
}

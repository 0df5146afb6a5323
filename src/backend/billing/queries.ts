// The SQL of the billing reads: the organization's plan fields, its mailbox counts, the caller's
// organization role.
import type { Queryable, Row } from '../../db/types.js';

export async function findOrganization(db: Queryable, organizationId: number): Promise<Row | null> {
  const rows = await db.query(
    `SELECT id, name, plan, api_access, paused, warmup_cap FROM organizations WHERE id = $1`,
    [organizationId],
  );
  return rows[0] ?? null;
}

/** Connected and warming mailboxes of the organization's live workspaces, and of one of them. */
export async function mailboxCounts(db: Queryable, organizationId: number, workspaceId: number) {
  const [counts] = await db.query<{ connected: number; warming: number; ws_connected: number; ws_warming: number }>(
    `SELECT count(*) FILTER (WHERE a.status <> 'disconnected')::int AS connected,
            count(*) FILTER (WHERE a.status = 'warming')::int AS warming,
            count(*) FILTER (WHERE a.status <> 'disconnected' AND a.workspace_id = $2)::int AS ws_connected,
            count(*) FILTER (WHERE a.status = 'warming' AND a.workspace_id = $2)::int AS ws_warming
       FROM accounts a JOIN workspaces w ON w.id = a.workspace_id
      WHERE w.organization_id = $1 AND w.deleted_at IS NULL`,
    [organizationId, workspaceId],
  );
  return counts;
}

/** The organization role of a user of the organization, or null. */
export async function orgRoleOf(
  db: Queryable,
  userId: number,
  organizationId: number,
): Promise<'OWNER' | 'MEMBER' | null> {
  const rows = await db.query(`SELECT org_role FROM users WHERE id = $1 AND organization_id = $2`, [
    userId,
    organizationId,
  ]);
  return rows[0]?.org_role ?? null;
}

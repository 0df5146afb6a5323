// The SQL of the workspace routes: every query is scoped by the path workspace and the caller's
// organization (a soft-deleted workspace names nothing); its members, their users and roles.
import type { Queryable, Row } from '../../db/types.js';
import type { Role } from '../../config/routes.js';

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

/** A member of a workspace: the membership joined with its user. */
export interface MemberRow {
  user_id: number;
  email: string;
  role: Role;
  org_role: 'OWNER' | 'MEMBER';
  created_at: Date;
}

const MEMBERS = `SELECT m.user_id, u.email, m.role, u.org_role, m.created_at
  FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1`;

export async function listMemberRows(db: Queryable, workspaceId: number): Promise<MemberRow[]> {
  return db.query<MemberRow & Row>(`${MEMBERS} ORDER BY m.user_id`, [workspaceId]);
}

/** The member, or null; `lock` holds the membership row until the transaction ends. */
export async function findMember(
  db: Queryable,
  workspaceId: number,
  userId: number,
  lock = false,
): Promise<MemberRow | null> {
  const rows = await db.query<MemberRow & Row>(`${MEMBERS} AND m.user_id = $2${lock ? ' FOR UPDATE OF m' : ''}`, [
    workspaceId,
    userId,
  ]);
  return rows[0] ?? null;
}

/** Locks the live workspace of the organization until the transaction ends; false when there is none. */
export async function lockLiveWorkspace(db: Queryable, workspaceId: number, organizationId: number): Promise<boolean> {
  const rows = await db.query(
    `SELECT id FROM workspaces WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL FOR UPDATE`,
    [workspaceId, organizationId],
  );
  return rows.length > 0;
}

/** The workspace's OWNERs other than `userId`. */
export async function countOtherOwners(db: Queryable, workspaceId: number, userId: number): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM memberships WHERE workspace_id = $1 AND role = 'OWNER' AND user_id <> $2`,
    [workspaceId, userId],
  );
  return row.n;
}

/** A new user of the organization (org role MEMBER) unless some user has the address; true when created. */
export async function insertUserIfNew(db: Queryable, organizationId: number, email: string): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO users (organization_id, email, org_role) VALUES ($1, $2, 'MEMBER')
     ON CONFLICT (lower(email)) DO NOTHING RETURNING id`,
    [organizationId, email],
  );
  return rows.length > 0;
}

/** The user of the address (case-insensitive), whatever its organization, or null. */
export async function findUserByEmail(
  db: Queryable,
  email: string,
): Promise<{ id: number; organization_id: number } | null> {
  const rows = await db.query<{ id: number; organization_id: number }>(
    `SELECT id, organization_id FROM users WHERE lower(email) = lower($1)`,
    [email],
  );
  return rows[0] ?? null;
}

/** Makes the user a member at `role`; false when it is a member already. */
export async function insertMembership(
  db: Queryable,
  workspaceId: number,
  userId: number,
  role: Role,
): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id, user_id) DO NOTHING RETURNING user_id`,
    [workspaceId, userId, role],
  );
  return rows.length > 0;
}

export async function updateMemberRole(db: Queryable, workspaceId: number, userId: number, role: Role): Promise<void> {
  await db.query(`UPDATE memberships SET role = $3 WHERE workspace_id = $1 AND user_id = $2`, [
    workspaceId,
    userId,
    role,
  ]);
}

export async function deleteMembership(db: Queryable, workspaceId: number, userId: number): Promise<void> {
  await db.query(`DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [workspaceId, userId]);
}

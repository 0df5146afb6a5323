// The SQL of the declarative state (export, diff, apply) that the service layer has no operation for:
// reading every access row at once, and creating organizations, users, workspaces and memberships,
// which until now only the seed and the backend's provisioning made. Keys, limits, organizations'
// access fields, admin tokens and webhook endpoints change through the service layer's own functions.
import type { Queryable, Row } from '../../db/types.js';

/**
 * Serializes applies: taken first in an apply's transaction and held to its commit, so two applies
 * racing run one after the other, the second planning against what the first left. Per schema, so
 * that databases sharing a server (the tests' schemas) do not wait on each other.
 */
export async function lockStateApply(q: Queryable): Promise<void> {
  await q.query(`SELECT pg_advisory_xact_lock(hashtext('keygate.state.apply:' || current_schema()))`);
}

export async function stateOrganizationRows(q: Queryable): Promise<Row[]> {
  return q.query(
    `SELECT id, name, plan, api_access, paused, limit_read, limit_write, limit_bulk, monthly_quota, monthly_quota_off
       FROM organizations ORDER BY id`,
  );
}

export async function stateUserRows(q: Queryable): Promise<Row[]> {
  return q.query(`SELECT id, organization_id, email, org_role FROM users ORDER BY id`);
}

/** Workspaces not deleted: a deleted one is history, not state. */
export async function stateWorkspaceRows(q: Queryable): Promise<Row[]> {
  return q.query(`SELECT id, organization_id, name FROM workspaces WHERE deleted_at IS NULL ORDER BY id`);
}

/** Memberships of the workspaces not deleted. */
export async function stateMembershipRows(q: Queryable): Promise<Row[]> {
  return q.query(
    `SELECT m.workspace_id, m.user_id, m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
      WHERE w.deleted_at IS NULL ORDER BY m.workspace_id, m.user_id`,
  );
}

// An organization's row is written by the service layer's creation too (createOrganization): one statement.
export { insertOrganization, type NewOrganizationRow } from '../service/queries.js';

export async function insertUser(q: Queryable, orgId: number, email: string, role: string): Promise<number> {
  const rows = await q.query(`INSERT INTO users (organization_id, email, org_role) VALUES ($1, $2, $3) RETURNING id`, [
    orgId,
    email,
    role,
  ]);
  return rows[0].id;
}

export async function updateUserRole(q: Queryable, id: number, role: string): Promise<void> {
  await q.query(`UPDATE users SET org_role = $2 WHERE id = $1`, [id, role]);
}

export async function insertWorkspace(q: Queryable, orgId: number, name: string, now: Date): Promise<number> {
  const rows = await q.query(
    `INSERT INTO workspaces (organization_id, name, created_at) VALUES ($1, $2, $3) RETURNING id`,
    [orgId, name, now],
  );
  return rows[0].id;
}

export async function insertMembership(q: Queryable, workspaceId: number, userId: number, role: string) {
  await q.query(`INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, $3)`, [
    workspaceId,
    userId,
    role,
  ]);
}

export async function updateMembershipRole(q: Queryable, workspaceId: number, userId: number, role: string) {
  await q.query(`UPDATE memberships SET role = $3 WHERE workspace_id = $1 AND user_id = $2`, [
    workspaceId,
    userId,
    role,
  ]);
}

export async function deleteMembership(q: Queryable, workspaceId: number, userId: number): Promise<void> {
  await q.query(`DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [workspaceId, userId]);
}

/** Deletes a webhook endpoint; its deliveries go with it (ON DELETE CASCADE of migration 110). */
export async function deleteEndpoint(q: Queryable, id: number): Promise<void> {
  await q.query(`DELETE FROM webhook_endpoints WHERE id = $1`, [id]);
}

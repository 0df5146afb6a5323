// The SQL of workspace provisioning (docs/decisions.md section 6, workspace:provision): the organization's
// workspaces, a new workspace and its first owners, and the daily warmup budgets under the organization's cap.
import type { Queryable, Row } from '../../db/types.js';

export async function orgRoleOf(db: Queryable, userId: number, organizationId: number): Promise<string | null> {
  const rows = await db.query(`SELECT org_role FROM users WHERE id = $1 AND organization_id = $2`, [
    userId,
    organizationId,
  ]);
  return rows[0]?.org_role ?? null;
}

export async function findLiveWorkspace(
  db: Queryable,
  workspaceId: number,
  organizationId: number,
): Promise<Row | null> {
  const rows = await db.query(
    `SELECT * FROM workspaces WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`,
    [workspaceId, organizationId],
  );
  return rows[0] ?? null;
}

/** Every live workspace of the organization with the user's role there (null where not a member). */
export async function liveWorkspacesWithRole(db: Queryable, organizationId: number, userId: number): Promise<Row[]> {
  return db.query(
    `SELECT w.*, m.role FROM workspaces w LEFT JOIN memberships m ON m.workspace_id = w.id AND m.user_id = $2
      WHERE w.organization_id = $1 AND w.deleted_at IS NULL ORDER BY w.id`,
    [organizationId, userId],
  );
}

export async function insertWorkspace(
  db: Queryable,
  organizationId: number,
  name: string,
  dailyWarmupBudget: number,
  now: Date,
): Promise<Row> {
  const [workspace] = await db.query(
    `INSERT INTO workspaces (organization_id, name, daily_warmup_budget, created_at) VALUES ($1, $2, $3, $4) RETURNING *`,
    [organizationId, name, dailyWarmupBudget, now],
  );
  return workspace;
}

/**
 * The creator and every owner of the organization become owners of a new workspace (spec, creation
 * rule 1); the members it then has, by user id.
 */
export async function addOwners(
  db: Queryable,
  workspaceId: number,
  organizationId: number,
  creatorId: number,
): Promise<Row[]> {
  await db.query(
    `INSERT INTO memberships (workspace_id, user_id, role)
     SELECT $1, u.id, 'OWNER' FROM users u WHERE u.organization_id = $2 AND (u.org_role = 'OWNER' OR u.id = $3)
     ON CONFLICT (workspace_id, user_id) DO NOTHING`,
    [workspaceId, organizationId, creatorId],
  );
  return db.query(`SELECT m.user_id, m.role FROM memberships m WHERE m.workspace_id = $1 ORDER BY m.user_id`, [
    workspaceId,
  ]);
}

/** The organization's daily warmup cap (null: no cap), or null when there is no such organization. */
export async function orgWarmupCap(
  db: Queryable,
  organizationId: number,
  lock: boolean,
): Promise<{ warmupCap: number | null } | null> {
  const rows = await db.query<{ warmup_cap: number | null }>(
    `SELECT warmup_cap FROM organizations WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
    [organizationId],
  );
  return rows.length ? { warmupCap: rows[0].warmup_cap } : null;
}

export interface WorkspaceBudget {
  workspaceId: number;
  name: string;
  dailyWarmupBudget: number;
}

/** The live workspaces of the organization with their budgets, by id. */
export async function liveWorkspaceBudgets(db: Queryable, organizationId: number): Promise<WorkspaceBudget[]> {
  const rows = await db.query(
    `SELECT id, name, daily_warmup_budget FROM workspaces WHERE organization_id = $1 AND deleted_at IS NULL ORDER BY id`,
    [organizationId],
  );
  return rows.map((w) => ({ workspaceId: w.id, name: w.name, dailyWarmupBudget: w.daily_warmup_budget }));
}

export async function updateWorkspaceBudget(
  db: Queryable,
  organizationId: number,
  workspaceId: number,
  dailyWarmupBudget: number,
): Promise<void> {
  await db.query(`UPDATE workspaces SET daily_warmup_budget = $3 WHERE id = $1 AND organization_id = $2`, [
    workspaceId,
    organizationId,
    dailyWarmupBudget,
  ]);
}

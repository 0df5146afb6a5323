// The SQL of the internal admin routes (CONTRACT section 7): the organization's access fields and a
// workspace's soft deletion.
import type { Queryable, Row } from '../../db/types.js';

/** The organization row, locked until the transaction ends (a plan change and its cap serialize). */
export async function lockOrganization(db: Queryable, organizationId: number): Promise<Row | null> {
  const rows = await db.query(`SELECT * FROM organizations WHERE id = $1 FOR UPDATE`, [organizationId]);
  return rows[0] ?? null;
}

export interface OrganizationFields {
  plan: string | null;
  apiAccess: boolean;
  paused: boolean;
  warmupCap: number | null;
  partnerCallbackUrl: string | null;
  partnerCallbackVerified: boolean;
}

export async function updateOrganization(db: Queryable, organizationId: number, fields: OrganizationFields): Promise<Row> {
  const rows = await db.query(
    `UPDATE organizations SET plan = $2, api_access = $3, paused = $4, warmup_cap = $5,
       partner_callback_url = $6, partner_callback_verified = $7 WHERE id = $1 RETURNING *`,
    [organizationId, fields.plan, fields.apiAccess, fields.paused, fields.warmupCap, fields.partnerCallbackUrl, fields.partnerCallbackVerified],
  );
  return rows[0];
}

/** Soft-deletes a workspace (the first deletion time stays); null when there is no such workspace. */
export async function softDeleteWorkspace(db: Queryable, workspaceId: number, at: Date): Promise<Row | null> {
  const rows = await db.query(
    `UPDATE workspaces SET deleted_at = coalesce(deleted_at, $2) WHERE id = $1 RETURNING id, organization_id, name, deleted_at`,
    [workspaceId, at],
  );
  return rows[0] ?? null;
}

// The SQL of the internal key management (CONTRACT section 7): sessions, the creator's membership,
// and the organization's keys (only a keyed hash of each secret is stored).
import type { Queryable, Row } from '../../db/types.js';

/** The user of an unexpired session, by the hash of its token, or null. */
export async function userOfSession(db: Queryable, tokenHash: string, now: Date): Promise<Row | null> {
  const rows = await db.query(
    `SELECT u.id, u.organization_id, u.org_role FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND (s.expires_at IS NULL OR s.expires_at > $2)`,
    [tokenHash, now],
  );
  return rows[0] ?? null;
}

/** The user's role in a live workspace of the organization, or null when not a member. */
export async function membershipRole(db: Queryable, workspaceId: number, userId: number, organizationId: number): Promise<string | null> {
  const rows = await db.query(
    `SELECT m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
      WHERE m.workspace_id = $1 AND m.user_id = $2 AND w.organization_id = $3 AND w.deleted_at IS NULL`,
    [workspaceId, userId, organizationId],
  );
  return rows[0]?.role ?? null;
}

export interface NewKey {
  organizationId: number;
  type: string;
  keyHash: string;
  hint: string;
  name: string;
  workspaceId: number | null;
  userId: number | null;
  role: string | null;
  scopes: string[];
  createdBy: number;
}

export async function insertKey(db: Queryable, key: NewKey): Promise<Row> {
  const rows = await db.query(
    `INSERT INTO api_keys (organization_id, type, key_hash, hint, name, workspace_id, user_id, role, scopes, created_by)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) RETURNING *`,
    [key.organizationId, key.type, key.keyHash, key.hint, key.name, key.workspaceId, key.userId, key.role, key.scopes, key.createdBy],
  );
  return rows[0];
}

export async function keysOfOrganization(db: Queryable, organizationId: number): Promise<Row[]> {
  return db.query(`SELECT * FROM api_keys WHERE organization_id = $1 ORDER BY id`, [organizationId]);
}

/**
 * Revokes a key of the organization (the first revocation time stays): owners may revoke any key,
 * members the keys they made or own. Null when no such key is theirs to revoke.
 */
export async function revokeKey(db: Queryable, keyId: number, by: { userId: number; organizationId: number; isOwner: boolean }, now: Date): Promise<Row | null> {
  const rows = await db.query(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $4)
      WHERE id = $1 AND organization_id = $2 AND ($3 OR created_by = $5 OR user_id = $5)
      RETURNING *`,
    [keyId, by.organizationId, by.isOwner, now, by.userId],
  );
  return rows[0] ?? null;
}

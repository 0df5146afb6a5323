// The SQL of the admin tokens (admin-tokens.ts): written with their audit row, read by keyed hash.
import type { Queryable, Row } from '../../db/types.js';

export async function insertAdminToken(
  q: Queryable,
  t: { name: string; role: string; tokenHash: string; hint: string; createdBy: string; createdAt: Date },
): Promise<Row> {
  const rows = await q.query(
    `INSERT INTO admin_tokens (name, role, token_hash, hint, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [t.name, t.role, t.tokenHash, t.hint, t.createdBy, t.createdAt],
  );
  return rows[0];
}

/** Admin tokens in id order, the revoked ones only when asked. */
export async function adminTokenRows(q: Queryable, includeRevoked: boolean): Promise<Row[]> {
  return q.query(`SELECT * FROM admin_tokens ${includeRevoked ? '' : 'WHERE revoked_at IS NULL'} ORDER BY id`);
}

/** An admin token under its row lock, or undefined. */
export async function lockAdminToken(q: Queryable, id: number): Promise<Row | undefined> {
  return (await q.query(`SELECT * FROM admin_tokens WHERE id = $1 FOR UPDATE`, [id]))[0];
}

export async function revokeAdminTokenRow(q: Queryable, id: number, now: Date): Promise<Row> {
  const rows = await q.query(`UPDATE admin_tokens SET revoked_at = $2 WHERE id = $1 RETURNING *`, [id, now]);
  return rows[0];
}

/** The active admin token of a hash (id, name, role, token_hash, last_used_at), or undefined. */
export async function activeAdminTokenByHash(q: Queryable, tokenHash: string): Promise<Row | undefined> {
  const rows = await q.query(
    `SELECT id, name, role, token_hash, last_used_at FROM admin_tokens WHERE token_hash = $1 AND revoked_at IS NULL`,
    [tokenHash],
  );
  return rows[0];
}

export async function touchAdminToken(q: Queryable, id: number, nowMs: number): Promise<void> {
  await q.query(`UPDATE admin_tokens SET last_used_at = to_timestamp($2 / 1000.0) WHERE id = $1`, [id, nowMs]);
}

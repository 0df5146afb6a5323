// The SQL of the service layer's keys, limits, organizations and sessions, as named functions taking a
// Queryable (the transaction's, when a caller holds one); the trail's is in audit-queries.ts, the admin
// tokens' in admin-token-queries.ts. The operations beside them keep the rules (validation, who may act,
// the audit row, the access bump); test/structure/sql-home.test.ts keeps SQL in these files.
import type { Queryable, Row } from '../../db/types.js';
import type { Bucket } from '../../config/routes.js';
import { BUCKETS } from '../../limits/counters.js';

// ---------------------------------------------------------------------------------------------
// Users and the rows a key is bound to

/** A user's id, organization and role there, or undefined. */
export async function userRow(q: Queryable, id: number): Promise<Row | undefined> {
  return (await q.query(`SELECT id, organization_id, org_role FROM users WHERE id = $1`, [id]))[0];
}

/** The organization of a user, or undefined when there is no such user. */
export async function organizationOfUser(q: Queryable, id: number): Promise<number | undefined> {
  return (await q.query(`SELECT organization_id FROM users WHERE id = $1`, [id]))[0]?.organization_id;
}

/** The organization of a workspace not deleted, or undefined. */
export async function organizationOfLiveWorkspace(q: Queryable, id: number): Promise<number | undefined> {
  return (await q.query(`SELECT organization_id FROM workspaces WHERE id = $1 AND deleted_at IS NULL`, [id]))[0]
    ?.organization_id;
}

/** A user's role in a workspace, or undefined when not a member. */
export async function membershipRole(q: Queryable, workspaceId: number, userId: number): Promise<string | undefined> {
  return (
    await q.query(`SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [workspaceId, userId])
  )[0]?.role;
}

export async function organizationExists(q: Queryable, id: number): Promise<boolean> {
  return (await q.query(`SELECT id FROM organizations WHERE id = $1`, [id])).length > 0;
}

// ---------------------------------------------------------------------------------------------
// API keys

export type KeyStatus = 'active' | 'expired' | 'revoked';

export interface KeyFilter {
  organizationId?: number;
  workspaceId?: number;
  userId?: number;
  type?: string;
  status?: KeyStatus;
  /** Keys with an id above this one (the next page). */
  afterId?: number;
  /** 1 to 1000; all when absent. */
  limit?: number;
}

// The key with its last uses (api_key_last_use, per secret hash).
const SELECT_KEY = `SELECT k.*,
    (SELECT max(u.last_used_at) FROM api_key_last_use u WHERE u.key_id = k.id) AS last_used_at,
    (SELECT u.last_used_at FROM api_key_last_use u WHERE u.key_hash = k.previous_key_hash) AS previous_last_used_at
  FROM api_keys k`;

/** A key with its last uses, or null; `lock` takes its row lock for the transaction. */
export async function keyRow(q: Queryable, id: number, lock = false): Promise<Row | null> {
  const rows = await q.query(`${SELECT_KEY} WHERE k.id = $1${lock ? ' FOR UPDATE OF k' : ''}`, [id]);
  return rows[0] ?? null;
}

/** Keys in id order matching the filter (`inOrganization`: a user actor's organization), as of `now`. */
export async function keyRows(q: Queryable, f: KeyFilter & { inOrganization?: number }, now: Date): Promise<Row[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (cond: (p: string) => string, v: unknown) => {
    params.push(v);
    where.push(cond(`$${params.length}`));
  };
  if (f.inOrganization !== undefined) add((p) => `k.organization_id = ${p}`, f.inOrganization);
  if (f.organizationId !== undefined) add((p) => `k.organization_id = ${p}`, f.organizationId);
  if (f.workspaceId !== undefined) add((p) => `k.workspace_id = ${p}`, f.workspaceId);
  if (f.userId !== undefined) add((p) => `k.user_id = ${p}`, f.userId);
  if (f.type !== undefined) add((p) => `k.type = ${p}`, f.type);
  if (f.afterId !== undefined) add((p) => `k.id > ${p}`, f.afterId);
  if (f.status === 'revoked') where.push('k.revoked_at IS NOT NULL');
  if (f.status === 'expired') add((p) => `k.revoked_at IS NULL AND k.expires_at <= ${p}`, now);
  if (f.status === 'active') add((p) => `k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ${p})`, now);
  return q.query(
    `${SELECT_KEY} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY k.id${f.limit ? ` LIMIT ${f.limit}` : ''}`,
    params,
  );
}

export interface NewKeyRow {
  organizationId: number;
  type: string;
  keyHash: string;
  hint: string;
  name: string;
  workspaceId: number | null;
  userId: number | null;
  role: string | null;
  scopes: string[];
  createdBy: number | null;
  createdAt: Date;
  expiresAt: Date | null;
  /** Compact JSON, or null. */
  metadata: string | null;
}

/** Inserts a key; returns its id. */
export async function insertKey(q: Queryable, k: NewKeyRow): Promise<number> {
  const rows = await q.query(
    `INSERT INTO api_keys (organization_id, type, key_hash, hint, name, workspace_id, user_id, role, scopes, created_by, created_at, expires_at, metadata)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13::jsonb) RETURNING id`,
    [
      k.organizationId,
      k.type,
      k.keyHash,
      k.hint,
      k.name,
      k.workspaceId,
      k.userId,
      k.role,
      k.scopes,
      k.createdBy,
      k.createdAt,
      k.expiresAt,
      k.metadata,
    ],
  );
  return rows[0].id;
}

/** Revokes a key; the first revocation time stays. */
export async function revokeKeyRow(q: Queryable, id: number, now: Date): Promise<void> {
  await q.query(`UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1`, [id, now]);
}

/** Sets the fields given (metadata as compact JSON or null), in this order: name, expiry, metadata. */
export async function updateKeyRow(
  q: Queryable,
  id: number,
  fields: { name?: string; expiresAt?: Date | null; metadata?: string | null },
): Promise<void> {
  const sets: string[] = [];
  const params: unknown[] = [];
  const set = (col: string, v: unknown, cast = '') => {
    params.push(v);
    sets.push(`${col} = $${params.length + 1}${cast}`);
  };
  if (fields.name !== undefined) set('name', fields.name);
  if (fields.expiresAt !== undefined) set('expires_at', fields.expiresAt);
  if (fields.metadata !== undefined) set('metadata', fields.metadata, '::jsonb');
  await q.query(`UPDATE api_keys SET ${sets.join(', ')} WHERE id = $1`, [id, ...params]);
}

/** A key's new secret, and the replaced one while its grace period runs (all null: none). */
export async function rotateKeyRow(
  q: Queryable,
  id: number,
  r: {
    keyHash: string;
    hint: string;
    rotatedAt: Date;
    previousKeyHash: string | null;
    previousHint: string | null;
    previousExpiresAt: Date | null;
  },
): Promise<void> {
  await q.query(
    `UPDATE api_keys SET key_hash = $2, hint = $3, rotated_at = $4, previous_key_hash = $5, previous_hint = $6, previous_expires_at = $7 WHERE id = $1`,
    [id, r.keyHash, r.hint, r.rotatedAt, r.previousKeyHash, r.previousHint, r.previousExpiresAt],
  );
}

// ---------------------------------------------------------------------------------------------
// Per-customer limits

const ORG_LIMITS = `SELECT o.id AS organization_id, o.plan, o.limit_read AS o_read, o.limit_write AS o_write, o.limit_bulk AS o_bulk,
                        o.monthly_quota, o.monthly_quota_off FROM organizations o WHERE o.id = $1`;
const KEY_LIMITS = `SELECT k.id AS key_id, k.organization_id, o.plan, k.limit_read AS k_read, k.limit_write AS k_write, k.limit_bulk AS k_bulk,
                        o.limit_read AS o_read, o.limit_write AS o_write, o.limit_bulk AS o_bulk, o.monthly_quota, o.monthly_quota_off
                   FROM api_keys k JOIN organizations o ON o.id = k.organization_id WHERE k.id = $1`;

/** An organization's plan, overrides (o_read, ...) and quota, or undefined; `lock` takes its row lock. */
export async function organizationLimitsRow(q: Queryable, id: number, lock = false): Promise<Row | undefined> {
  return (await q.query(lock ? `${ORG_LIMITS} FOR UPDATE` : ORG_LIMITS, [id]))[0];
}

/** A key's overrides (k_read, ...) with its organization's, or undefined; `lock` takes the key's row lock. */
export async function keyLimitsRow(q: Queryable, id: number, lock = false): Promise<Row | undefined> {
  return (await q.query(lock ? `${KEY_LIMITS} FOR UPDATE OF k` : KEY_LIMITS, [id]))[0];
}

/** A change of overrides: a number sets, null clears, absent keeps; 'none' (organizations) removes the quota. */
export type LimitColumns = { [b in Bucket]?: number | null } & { monthlyQuota?: number | 'none' | null };

/** Writes a change of limits to an organization or a key (which holds no monthly quota). */
export async function updateLimits(
  q: Queryable,
  table: 'organizations' | 'api_keys',
  id: number,
  change: LimitColumns,
): Promise<void> {
  const params: unknown[] = [id];
  const set: string[] = [];
  for (const b of BUCKETS) {
    if (change[b] === undefined) continue;
    params.push(change[b]);
    set.push(`limit_${b} = $${params.length}`);
  }
  if (change.monthlyQuota !== undefined) {
    params.push(typeof change.monthlyQuota === 'number' ? change.monthlyQuota : null);
    set.push(`monthly_quota = $${params.length}`, `monthly_quota_off = ${change.monthlyQuota === 'none'}`);
  }
  await q.query(`UPDATE ${table} SET ${set.join(', ')} WHERE id = $1`, params);
}

// ---------------------------------------------------------------------------------------------
// Organizations and workspaces

/** An organization, or undefined; `lock` takes its row lock. */
export async function organizationRow(q: Queryable, id: number, lock = false): Promise<Row | undefined> {
  return (await q.query(`SELECT * FROM organizations WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]))[0];
}

/** Organizations with an id above `afterId`, in id order. */
export async function organizationRows(q: Queryable, afterId: number, limit: number): Promise<Row[]> {
  return q.query(`SELECT * FROM organizations WHERE id > $1 ORDER BY id LIMIT ${limit}`, [afterId]);
}

export interface NewOrganizationRow {
  name: string;
  plan: string | null;
  apiAccess: boolean;
  paused: boolean;
  read: number | null;
  write: number | null;
  bulk: number | null;
  monthlyQuota: number | 'none' | null;
}

/** A new organization with its plan, access flags and overrides; returns its id. */
export async function insertOrganization(q: Queryable, o: NewOrganizationRow): Promise<number> {
  const rows = await q.query(
    `INSERT INTO organizations (name, plan, api_access, paused, limit_read, limit_write, limit_bulk, monthly_quota, monthly_quota_off)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
    [
      o.name,
      o.plan,
      o.apiAccess,
      o.paused,
      o.read,
      o.write,
      o.bulk,
      typeof o.monthlyQuota === 'number' ? o.monthlyQuota : null,
      o.monthlyQuota === 'none',
    ],
  );
  return rows[0].id;
}

/** Writes every access field of an organization; returns its row. */
export async function updateOrganizationRow(
  q: Queryable,
  id: number,
  o: {
    plan: string | null;
    apiAccess: boolean;
    paused: boolean;
    warmupCap: number | null;
    partnerCallbackUrl: string | null;
    partnerCallbackVerified: boolean;
  },
): Promise<Row> {
  const rows = await q.query(
    `UPDATE organizations SET plan = $2, api_access = $3, paused = $4, warmup_cap = $5,
         partner_callback_url = $6, partner_callback_verified = $7 WHERE id = $1 RETURNING *`,
    [id, o.plan, o.apiAccess, o.paused, o.warmupCap, o.partnerCallbackUrl, o.partnerCallbackVerified],
  );
  return rows[0];
}

/** A workspace under its row lock, or undefined. */
export async function lockWorkspace(q: Queryable, id: number): Promise<Row | undefined> {
  return (
    await q.query(`SELECT id, organization_id, name, deleted_at FROM workspaces WHERE id = $1 FOR UPDATE`, [id])
  )[0];
}

/** Soft-deletes a workspace (the first deletion time stays); returns its row. */
export async function softDeleteWorkspace(q: Queryable, id: number, now: Date): Promise<Row> {
  const rows = await q.query(
    `UPDATE workspaces SET deleted_at = coalesce(deleted_at, $2) WHERE id = $1 RETURNING id, organization_id, name, deleted_at`,
    [id, now],
  );
  return rows[0];
}

/**
 * Lowers every mailbox of the organization whose max, current or pending limit is above `cap`; a
 * pending max no longer below the new max is dropped. Returns how many mailboxes changed.
 */
export async function lowerMailboxesToCap(q: Queryable, orgId: number, cap: number): Promise<number> {
  const rows = await q.query(
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

// ---------------------------------------------------------------------------------------------
// Sessions

export async function insertSession(
  q: Queryable,
  s: { tokenHash: string; userId: number; createdAt: Date; expiresAt: Date },
): Promise<void> {
  await q.query(`INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`, [
    s.tokenHash,
    s.userId,
    s.createdAt,
    s.expiresAt,
  ]);
}

/** The user (id, organization_id, org_role) of a session token's hash unexpired at `now`, or undefined. */
export async function userOfSessionHash(q: Queryable, tokenHash: string, now: Date): Promise<Row | undefined> {
  const rows = await q.query(
    `SELECT u.id, u.organization_id, u.org_role FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND (s.expires_at IS NULL OR s.expires_at > $2)`,
    [tokenHash, now],
  );
  return rows[0];
}

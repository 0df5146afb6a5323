// Admin tokens of the admin HTTP API (src/admin-api/): created with a role (read or write), shown once,
// stored as a keyed hash (the API keys' HMAC with the database's pepper), revocable, with lastUsedAt.
// The CLI (`keygate admin-tokens`) and the admin API's own /api/admin-tokens routes call these; each
// change is audited in its own transaction (src/access/service/audit.ts).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db, Queryable, Row } from '../../db/types.js';
import { randomAlphanumeric } from '../secrets.js';
import { recordAudit } from './audit.js';
import { ServiceError, type Actor, type ServiceContext } from './context.js';
import { isoOrNull } from '../../db/time.js';
import {
  activeAdminTokenByHash,
  adminTokenRows,
  insertAdminToken,
  lockAdminToken,
  revokeAdminTokenRow,
  touchAdminToken,
} from './admin-token-queries.js';

export const ADMIN_TOKEN_ROLES = ['read', 'write'] as const;
export type AdminTokenRole = (typeof ADMIN_TOKEN_ROLES)[number];

/** An admin token: `kga_` plus 40 characters of [A-Za-z0-9] (238 bits). */
const TOKEN = /^kga_[A-Za-z0-9]{40}$/;
export const ADMIN_TOKEN_PREFIX = 'kga_';

/** What the admin-token operations need of the service layer's context. */
export type AdminTokenContext = Pick<ServiceContext, 'actor' | 'requestId' | 'clock' | 'pepper'> & { db: Db };

export interface AdminTokenView {
  id: number;
  name: string;
  role: AdminTokenRole;
  hint: string;
  createdBy: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** What a list or an answer shows of a token: never its hash, never the token. */
export function adminTokenView(r: Row): AdminTokenView {
  return {
    id: r.id,
    name: r.name,
    role: r.role,
    hint: r.hint,
    createdBy: r.created_by,
    createdAt: isoOrNull(r.created_at)!,
    lastUsedAt: isoOrNull(r.last_used_at),
    revokedAt: isoOrNull(r.revoked_at),
  };
}

export function hashAdminToken(pepper: string, token: string): string {
  // A domain prefix keeps an admin token's hash apart from an API key's even under one pepper.
  return createHmac('sha256', pepper).update('admin-token:').update(token).digest('hex');
}

/** Who made a token, as its row keeps it: `cli:<os user>`, `admin-token:<id>`, `seed`, ... */
export function actorLabel(a: Actor): string {
  return a.kind === 'admin-token'
    ? `admin-token:${a.id}`
    : a.kind === 'cli'
      ? `cli:${a.osUser}`
      : a.kind === 'user'
        ? `user:${a.id}`
        : a.kind;
}

export async function createAdminToken(
  ctx: AdminTokenContext,
  input: { name: string; role: string },
): Promise<AdminTokenView & { token: string }> {
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (name.length < 1 || name.length > 100)
    throw new ServiceError('invalid', 'name must be 1 to 100 characters', 'name', 'name');
  if (!(ADMIN_TOKEN_ROLES as readonly string[]).includes(input.role))
    throw new ServiceError('invalid', `role must be one of ${ADMIN_TOKEN_ROLES.join(', ')}`, 'role', 'role');
  const token = ADMIN_TOKEN_PREFIX + randomAlphanumeric(40);
  const view = await ctx.db.tx(async (q) => {
    const row = await insertAdminToken(q, {
      name,
      role: input.role,
      tokenHash: hashAdminToken(ctx.pepper, token),
      hint: token.slice(0, 8) + '…',
      createdBy: actorLabel(ctx.actor),
      createdAt: new Date(ctx.clock.now()),
    });
    const v = adminTokenView(row);
    await recordAudit(q, ctx, {
      action: 'admin-token.create',
      targetType: 'admin-token',
      targetIds: [v.id],
      organizationId: null,
      after: v,
    });
    return v;
  });
  return { ...view, token };
}

export async function listAdminTokens(
  db: Queryable,
  opts: { includeRevoked?: boolean } = {},
): Promise<AdminTokenView[]> {
  const rows = await adminTokenRows(db, opts.includeRevoked ?? false);
  return rows.map(adminTokenView);
}

/** Revoke (idempotent: a revoked token keeps its first revocation time and is audited once). */
export async function revokeAdminToken(ctx: AdminTokenContext, id: number): Promise<AdminTokenView> {
  return ctx.db.tx(async (q) => {
    const cur = await lockAdminToken(q, id);
    if (!cur) throw new ServiceError('not_found', `no admin token ${id}`, 'no_admin_token');
    if (cur.revoked_at) return adminTokenView(cur);
    const row = await revokeAdminTokenRow(q, id, new Date(ctx.clock.now()));
    const before = adminTokenView(cur);
    const after = adminTokenView(row);
    await recordAudit(q, ctx, {
      action: 'admin-token.revoke',
      targetType: 'admin-token',
      targetIds: [id],
      organizationId: null,
      before,
      after,
    });
    return after;
  });
}

export interface AuthenticatedToken {
  id: number;
  name: string;
  role: AdminTokenRole;
}

/**
 * The active token a presented value names, or null. The lookup is by keyed hash (an index hit, no
 * timing to learn from the stored value); the comparison of the hashes is constant-time anyway.
 * `lastUsedAt` is written at most once a minute per token, so reads do not each cost a write.
 */
export async function authenticateAdminToken(
  db: Queryable,
  pepper: string,
  presented: string,
  nowMs: number,
): Promise<AuthenticatedToken | null> {
  if (!TOKEN.test(presented)) return null;
  const hash = hashAdminToken(pepper, presented);
  const r = await activeAdminTokenByHash(db, hash);
  if (!r) return null;
  if (!timingSafeEqual(Buffer.from(r.token_hash, 'hex'), Buffer.from(hash, 'hex'))) return null;
  const last = r.last_used_at ? new Date(r.last_used_at).getTime() : 0;
  if (nowMs - last >= 60_000) await touchAdminToken(db, r.id, nowMs);
  return { id: r.id, name: r.name, role: r.role };
}

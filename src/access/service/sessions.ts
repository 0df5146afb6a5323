// Sessions of the web app's users (the cookie `session=<token>` of the backend's /api-keys). Like a
// key's secret, a token is returned once and stored only as its keyed hash.
import { hashSecret, randomAlphanumeric } from '../secrets.js';
import { recordAudit } from './audit.js';
import { nowOf, ServiceError, type ServiceContext } from './context.js';

export const MAX_SESSION_TTL_MS = 366 * 86_400_000;

export interface SessionUser {
  id: number;
  organizationId: number;
  orgRole: 'OWNER' | 'MEMBER';
}

export async function createSession(
  ctx: ServiceContext,
  input: { userId: number; ttlMs: number },
): Promise<{ userId: number; organizationId: number; expiresAt: string; token: string }> {
  if (!Number.isInteger(input.ttlMs) || input.ttlMs < 60_000 || input.ttlMs > MAX_SESSION_TTL_MS) {
    throw new ServiceError('invalid', 'ttl must be a minute to 366 days', 'ttl', 'ttl');
  }
  const token = randomAlphanumeric(48);
  const now = nowOf(ctx);
  const expiresAt = new Date(now.getTime() + input.ttlMs);
  const session = await ctx.db.tx(async (q) => {
    const u = await q.query(`SELECT organization_id FROM users WHERE id = $1`, [input.userId]);
    if (!u.length) throw new ServiceError('not_found', `no user ${input.userId}`, 'no_user', 'userId');
    await q.query(`INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`, [
      hashSecret(ctx.pepper, token),
      input.userId,
      now,
      expiresAt,
    ]);
    const view = {
      userId: input.userId,
      organizationId: u[0].organization_id as number,
      expiresAt: expiresAt.toISOString(),
    };
    await recordAudit(q, ctx, {
      action: 'session.create',
      targetType: 'session',
      targetIds: [input.userId],
      organizationId: view.organizationId,
      after: view,
    });
    return view;
  });
  return { ...session, token };
}

/** The user of an unexpired session token, or null. Reading is not audited. */
export async function userOfSession(
  ctx: Pick<ServiceContext, 'db' | 'pepper' | 'clock'>,
  token: string,
): Promise<SessionUser | null> {
  const rows = await ctx.db.query(
    `SELECT u.id, u.organization_id, u.org_role FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND (s.expires_at IS NULL OR s.expires_at > $2)`,
    [hashSecret(ctx.pepper, token), nowOf(ctx)],
  );
  return rows[0] ? { id: rows[0].id, organizationId: rows[0].organization_id, orgRole: rows[0].org_role } : null;
}

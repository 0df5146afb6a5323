// Sessions of the web app's users (the cookie `session=<token>` of the backend's /api-keys). Like a
// key's secret, a token is returned once and stored only as its keyed hash.
import { hashSecret, randomAlphanumeric } from '../secrets.js';
import { recordAudit } from './audit.js';
import { nowOf, ServiceError, type ServiceContext } from './context.js';
import { insertSession, organizationOfUser, userOfSessionHash } from './queries.js';

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
    const organizationId = await organizationOfUser(q, input.userId);
    if (organizationId === undefined)
      throw new ServiceError('not_found', `no user ${input.userId}`, 'no_user', 'userId');
    await insertSession(q, {
      tokenHash: hashSecret(ctx.pepper, token),
      userId: input.userId,
      createdAt: now,
      expiresAt,
    });
    const view = {
      userId: input.userId,
      organizationId,
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
  const row = await userOfSessionHash(ctx.db, hashSecret(ctx.pepper, token), nowOf(ctx));
  return row ? { id: row.id, organizationId: row.organization_id, orgRole: row.org_role } : null;
}

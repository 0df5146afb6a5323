// The internal, session-authenticated key management of the web app (CONTRACT section 7; spec codes
// 150101 to 150104). Envelope A throughout. A new key's secret is answered once and stored only hashed.
import { ApiError } from '../../http/errors.js';
import { generateSecret, hashSecret, hintOf } from '../../access/secrets.js';
import { roleRank } from '../../access/principal.js';
import { parse, MAX_ID, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { createSchema } from './schemas.js';
import { insertKey, keysOfOrganization, membershipRole, revokeKey, userOfSession } from './queries.js';

export interface SessionUser {
  id: number;
  organizationId: number;
  orgRole: 'OWNER' | 'MEMBER';
}

/** The `session=<token>` cookie: none is 150001, an unknown or expired one 150002. */
export async function requireSession(ctx: Ctx): Promise<SessionUser> {
  const cookie = ctx.req.headers.cookie ?? '';
  const sessionCookie = /(?:^|;\s*)session=([^;]+)/.exec(cookie);
  if (!sessionCookie) throw new ApiError('150001', 'Missing session cookie.');
  let token: string;
  try {
    token = decodeURIComponent(sessionCookie[1]);
  } catch {
    // Not percent-encoding we can read: no session was ever issued with it.
    throw new ApiError('150002', 'Invalid or expired session.');
  }
  const user = await userOfSession(ctx.db, hashSecret(ctx.svc.pepper, token), new Date(ctx.svc.clock.now()));
  if (!user) throw new ApiError('150002', 'Invalid or expired session.');
  return { id: user.id, organizationId: user.organization_id, orgRole: user.org_role };
}

function view(key: Record<string, any>) {
  return {
    id: key.id,
    name: key.name,
    type: key.type,
    hint: key.hint,
    workspaceId: key.workspace_id,
    userId: key.user_id,
    role: key.role,
    scopes: key.scopes,
    createdBy: key.created_by,
    createdAt: key.created_at,
    revokedAt: key.revoked_at,
  };
}

export function register(router: Router, _svc: BackendServices): void {
  router.post('/api-keys', async (ctx) => {
    const user = await requireSession(ctx);
    const body = parse(createSchema, ctx.body ?? {});
    const known = ctx.svc.scopes();
    const unknown = body.scopes.find((scope) => !(scope in known));
    if (unknown) throw new ApiError('invalid_request', `scopes: unknown scope ${unknown}`, { field: 'scopes' });
    let workspaceId: number | null = null;
    let role: string | null = null;
    if (body.type === 'workspace') {
      if (body.workspaceId === undefined) throw new ApiError('150101');
      const creatorRole = await membershipRole(ctx.db, body.workspaceId, user.id, user.organizationId);
      if (creatorRole === null) throw new ApiError('150103');
      if (body.role && roleRank(body.role) > roleRank(creatorRole)) throw new ApiError('150102');
      // The default ADMIN is capped by the creator's role (CONTRACT section 2).
      role = body.role ?? (roleRank('ADMIN') > roleRank(creatorRole) ? creatorRole : 'ADMIN');
      workspaceId = body.workspaceId;
    } else {
      if (body.workspaceId !== undefined || body.role !== undefined) {
        throw new ApiError('150103', `A ${body.type} key is not bound to a workspace or a role.`);
      }
      // A partner key sees every account of the organization: only its owners may make one.
      if (body.type === 'partner' && user.orgRole !== 'OWNER') throw new ApiError('150102', 'Only organization owners can create partner keys.');
    }
    const secret = generateSecret(body.type);
    const created = await insertKey(ctx.db, {
      organizationId: user.organizationId,
      type: body.type,
      keyHash: hashSecret(ctx.svc.pepper, secret),
      hint: hintOf(secret),
      name: body.name,
      workspaceId,
      userId: body.type === 'personal' ? user.id : null,
      role,
      scopes: body.type === 'partner' ? [] : body.scopes,
      createdBy: user.id,
    });
    ctx.svc.log.info({ keyId: created.id, type: body.type, by: user.id }, 'api key created');
    return { status: 201, data: { ...view(created), secret } };
  });

  router.get('/api-keys', async (ctx) => {
    const user = await requireSession(ctx);
    return { data: (await keysOfOrganization(ctx.db, user.organizationId)).map(view) };
  });

  router.delete('/api-keys/{keyId}', async (ctx) => {
    const user = await requireSession(ctx);
    const raw = ctx.params.keyId;
    // Only a decimal within PostgreSQL's integer can name a key (abc, 1.5 or 1e3 never reach the query).
    if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > MAX_ID) throw new ApiError('150104');
    const id = Number(raw);
    const revoked = await revokeKey(ctx.db, id, { userId: user.id, organizationId: user.organizationId, isOwner: user.orgRole === 'OWNER' }, new Date(ctx.svc.clock.now()));
    if (!revoked) throw new ApiError('150104');
    await ctx.svc.accessChanged(user.organizationId);
    ctx.svc.log.info({ keyId: id, by: user.id }, 'api key revoked');
    return { data: view(revoked) };
  });
}

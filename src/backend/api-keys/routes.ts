// The internal, session-authenticated key management of the web app (CONTRACT section 7; spec codes
// 150101 to 150104). Envelope A throughout. A new key's secret is answered once and stored only hashed.
import { ApiError } from '../../http/errors.js';
import { generateSecret, hashSecret, hintOf } from '../../access/secrets.js';
import { roleRank } from '../../access/principal.js';
import { parse, MAX_ID, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { createSchema } from './schemas.js';

export interface SessionUser {
  id: number;
  organizationId: number;
  orgRole: 'OWNER' | 'MEMBER';
}

/** The `session=<token>` cookie: none is 150001, an unknown or expired one 150002. */
export async function requireSession(ctx: Ctx): Promise<SessionUser> {
  const cookie = ctx.req.headers.cookie ?? '';
  const m = /(?:^|;\s*)session=([^;]+)/.exec(cookie);
  if (!m) throw new ApiError('150001', 'Missing session cookie.');
  let token: string;
  try {
    token = decodeURIComponent(m[1]);
  } catch {
    // Not percent-encoding we can read: no session was ever issued with it.
    throw new ApiError('150002', 'Invalid or expired session.');
  }
  const rows = await ctx.db.query(
    `SELECT u.id, u.organization_id, u.org_role FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND (s.expires_at IS NULL OR s.expires_at > $2)`,
    [hashSecret(ctx.svc.pepper, token), new Date(ctx.svc.clock.now())],
  );
  if (!rows.length) throw new ApiError('150002', 'Invalid or expired session.');
  return { id: rows[0].id, organizationId: rows[0].organization_id, orgRole: rows[0].org_role };
}

function view(k: Record<string, any>) {
  return {
    id: k.id,
    name: k.name,
    type: k.type,
    hint: k.hint,
    workspaceId: k.workspace_id,
    userId: k.user_id,
    role: k.role,
    scopes: k.scopes,
    createdBy: k.created_by,
    createdAt: k.created_at,
    revokedAt: k.revoked_at,
  };
}

export function register(router: Router, _svc: BackendServices): void {
  router.post('/api-keys', async (ctx) => {
    const user = await requireSession(ctx);
    const body = parse(createSchema, ctx.body ?? {});
    const known = ctx.svc.scopes();
    const unknown = body.scopes.find((sc) => !(sc in known));
    if (unknown) throw new ApiError('invalid_request', `scopes: unknown scope ${unknown}`, { field: 'scopes' });
    let workspaceId: number | null = null;
    let role: string | null = null;
    if (body.type === 'workspace') {
      if (body.workspaceId === undefined) throw new ApiError('150101');
      const m = await ctx.db.query(
        `SELECT m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
          WHERE m.workspace_id = $1 AND m.user_id = $2 AND w.organization_id = $3 AND w.deleted_at IS NULL`,
        [body.workspaceId, user.id, user.organizationId],
      );
      if (!m.length) throw new ApiError('150103');
      const creatorRole = m[0].role as string;
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
    const rows = await ctx.db.query(
      `INSERT INTO api_keys (organization_id, type, key_hash, hint, name, workspace_id, user_id, role, scopes, created_by)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) RETURNING *`,
      [user.organizationId, body.type, hashSecret(ctx.svc.pepper, secret), hintOf(secret), body.name, workspaceId,
        body.type === 'personal' ? user.id : null, role, body.type === 'partner' ? [] : body.scopes, user.id],
    );
    ctx.svc.log.info({ keyId: rows[0].id, type: body.type, by: user.id }, 'api key created');
    return { status: 201, data: { ...view(rows[0]), secret } };
  });

  router.get('/api-keys', async (ctx) => {
    const user = await requireSession(ctx);
    const rows = await ctx.db.query(`SELECT * FROM api_keys WHERE organization_id = $1 ORDER BY id`, [user.organizationId]);
    return { data: rows.map(view) };
  });

  router.delete('/api-keys/{keyId}', async (ctx) => {
    const user = await requireSession(ctx);
    const raw = ctx.params.keyId;
    // Only a decimal within PostgreSQL's integer can name a key (abc, 1.5 or 1e3 never reach the query).
    if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > MAX_ID) throw new ApiError('150104');
    const id = Number(raw);
    // Owners may revoke any key of the organization; members the keys they made or own.
    const rows = await ctx.db.query(
      `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $4)
        WHERE id = $1 AND organization_id = $2 AND ($3 OR created_by = $5 OR user_id = $5)
        RETURNING *`,
      [id, user.organizationId, user.orgRole === 'OWNER', new Date(ctx.svc.clock.now()), user.id],
    );
    if (!rows.length) throw new ApiError('150104');
    await ctx.svc.accessChanged(user.organizationId);
    ctx.svc.log.info({ keyId: id, by: user.id }, 'api key revoked');
    return { data: view(rows[0]) };
  });
}

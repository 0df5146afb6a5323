// The internal, session-authenticated key management of the web app (docs/decisions.md section 7; spec codes
// 150101 to 150104). Envelope A throughout. The operations, their rules and their audit rows are the
// service layer's (src/access/service/keys.ts): these routes parse input, map refusals to codes and
// shape answers. A new key's secret is answered once and stored only hashed.
import { ApiError } from '../../http/errors.js';
import { serviceContext, ServiceError, type ServiceContext } from '../../access/service/context.js';
import {
  createKey,
  getKey,
  listKeys,
  revokeKey,
  rotateKey,
  updateKey,
  type KeyView,
} from '../../access/service/keys.js';
import { userOfSession, type SessionUser } from '../../access/service/sessions.js';
import { parse, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { createSchema, listQuery, rotateSchema, updateSchema } from './schemas.js';
import { isDbId } from '../../config/contract.js';

export type { SessionUser };

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
  const user = await userOfSession({ db: ctx.db, pepper: ctx.svc.pepper, clock: ctx.svc.clock }, token);
  if (!user) throw new ApiError('150002', 'Invalid or expired session.');
  return user;
}

/** The session's user, acting through the service layer for this request. */
async function asUser(ctx: Ctx): Promise<{ user: SessionUser; service: ServiceContext }> {
  const user = await requireSession(ctx);
  return { user, service: serviceContext({ ...ctx.svc, db: ctx.db }, { kind: 'user', id: user.id }, ctx.requestId) };
}

const CODE_OF_REASON: Record<string, '150101' | '150102' | '150103' | '150104'> = {
  workspace_required: '150101',
  role_above_creator: '150102',
  no_workspace_access: '150103',
  no_key: '150104',
};

/** A service refusal in Envelope A: the spec's codes where one fits, else the general ones. */
async function mapped<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    const code = err.reason ? CODE_OF_REASON[err.reason] : undefined;
    // The spec's messages where they fit; a role cap on a partner key says why in its own words.
    if (code) throw new ApiError(code, code === '150102' || code === '150103' ? err.message : undefined);
    const details = err.field ? { field: err.field } : {};
    if (err.kind === 'invalid') throw new ApiError('invalid_request', err.message, details);
    if (err.kind === 'conflict') throw new ApiError('conflict', err.message, details);
    if (err.kind === 'not_found') throw new ApiError('150104');
    throw new ApiError('forbidden', err.message);
  }
}

/** A key as the web app shows it (its organization is the session's, so not repeated). */
function view(key: KeyView) {
  const { organizationId: _org, ...rest } = key;
  return rest;
}

/** A key id in the path: only a decimal within PostgreSQL's integer (abc, 1.5 or 1e3 never reach a query). */
function keyIdOf(ctx: Ctx): number {
  const raw = ctx.params.keyId;
  if (!isDbId(raw)) throw new ApiError('150104');
  return Number(raw);
}

export function register(router: Router, _svc: BackendServices): void {
  router.post('/api-keys', async (ctx) => {
    const { user, service } = await asUser(ctx);
    const body = parse(createSchema, ctx.body ?? {});
    // A partner key carries no scopes: what a client sends for one is dropped, as before.
    const scopes = body.type === 'partner' ? [] : body.scopes;
    const { key, secret } = await mapped(() =>
      createKey(service, {
        type: body.type,
        name: body.name,
        scopes,
        workspaceId: body.workspaceId,
        role: body.role,
        expiresAt: body.expiresAt === undefined ? undefined : body.expiresAt === null ? null : new Date(body.expiresAt),
        metadata: body.metadata,
      }),
    );
    ctx.svc.log.info({ keyId: key.id, type: key.type, by: user.id }, 'api key created');
    return { status: 201, data: { ...view(key), secret } };
  });

  router.get('/api-keys', async (ctx) => {
    const { service } = await asUser(ctx);
    const q = parse(listQuery, Object.fromEntries(ctx.query));
    return { data: (await mapped(() => listKeys(service, q))).map(view) };
  });

  router.get('/api-keys/{keyId}', async (ctx) => {
    const { service } = await asUser(ctx);
    const id = keyIdOf(ctx);
    return { data: view(await mapped(() => getKey(service, id))) };
  });

  router.patch('/api-keys/{keyId}', async (ctx) => {
    const { user, service } = await asUser(ctx);
    const id = keyIdOf(ctx);
    const body = parse(updateSchema, ctx.body ?? {});
    const key = await mapped(() =>
      updateKey(service, id, {
        name: body.name,
        expiresAt: body.expiresAt === undefined ? undefined : body.expiresAt === null ? null : new Date(body.expiresAt),
        metadata: body.metadata,
      }),
    );
    // Which fields, never their values: metadata stays out of logs.
    ctx.svc.log.info({ keyId: id, by: user.id, fields: Object.keys(body) }, 'api key updated');
    return { data: view(key) };
  });

  router.post('/api-keys/{keyId}/rotate', async (ctx) => {
    const { user, service } = await asUser(ctx);
    const id = keyIdOf(ctx);
    const body = parse(rotateSchema, ctx.body ?? {});
    const { key, secret } = await mapped(() =>
      rotateKey(service, id, { graceMs: body.graceSeconds === undefined ? undefined : body.graceSeconds * 1000 }),
    );
    ctx.svc.log.info({ keyId: id, by: user.id }, 'api key rotated');
    return { data: { ...view(key), secret } };
  });

  router.delete('/api-keys/{keyId}', async (ctx) => {
    const { user, service } = await asUser(ctx);
    const id = keyIdOf(ctx);
    const revoked = await mapped(() => revokeKey(service, id));
    ctx.svc.log.info({ keyId: id, by: user.id }, 'api key revoked');
    return { data: view(revoked) };
  });
}

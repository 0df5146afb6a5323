// Provider workspace routes of both interfaces (see service.ts for the rules and decisions):
//   /v2/workspaces/{workspaceId}/provider-workspaces[...]  scoped by the path workspace, Envelope B
//   /v1/workspaces[...]                                    scoped by the partner key's organization
// In /v1 a registered tenant's `workspaceId` is the provider workspace id as a decimal string.
import { ApiError } from '../../http/errors.js';
import { idParam, pagination, parse, queryObject, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { ProviderClient } from './client.js';
import {
  ProviderWorkspaces,
  defaultWorkspace,
  organizationOfWorkspace,
  toRecord,
  type notStarted,
  type toSync,
  type PwRow,
} from './service.js';
import { emptyBody, noQuery, previewQuery, registerBody } from './schemas.js';
import { PG_INT_MAX, isDbId } from '../../config/contract.js';

function previewFilters(ctx: Ctx) {
  const query = parse(previewQuery, queryObject(ctx.query));
  const domains = query.domain
    ?.split(',')
    .map((domain) => domain.trim())
    .filter(Boolean);
  return { search: query.search, domains, page: query.page ?? 1, limit: query.limit ?? 50 };
}

/** The /v1 registration record (v1 spec: workspaceId as a string, provider, adminEmail, tenantId, status). */
function v1Record(row: PwRow) {
  const rec = toRecord(row);
  return {
    workspaceId: String(rec.id),
    provider: rec.provider,
    adminEmail: rec.adminEmail,
    tenantId: rec.tenantId,
    status: rec.status,
    domains: rec.domains,
    importsIntoWorkspaceId: rec.workspaceId,
    lastSyncedAt: rec.lastSyncedAt,
    createdAt: rec.createdAt,
  };
}

/** The /v1 sync record: `workspaceId` is the registration's id (as v1 names it), as a string. */
function v1Sync(sync: ReturnType<typeof toSync> | ReturnType<typeof notStarted>) {
  return {
    syncId: sync.id,
    workspaceId: String(sync.providerWorkspaceId),
    importsIntoWorkspaceId: sync.workspaceId,
    status: sync.status,
    total: sync.total,
    imported: sync.imported,
    skipped: sync.skipped,
    error: sync.error,
    startedAt: sync.startedAt,
    finishedAt: sync.finishedAt,
  };
}

export function register(router: Router, svc: BackendServices): void {
  const pws = new ProviderWorkspaces(
    svc.db,
    new ProviderClient({ googleAdminUrl: svc.config.googleAdminUrl, microsoftGraphUrl: svc.config.microsoftGraphUrl }),
    svc.plans,
  );
  registerV2(router, pws, svc);
  registerV1(router, pws, svc);
}

/** The workspace's provider workspaces under /v2. */
function registerV2(router: Router, pws: ProviderWorkspaces, svc: BackendServices): void {
  const base = '/v2/workspaces/{workspaceId}/provider-workspaces';
  const v2Pw = (ctx: Ctx) => {
    const id = idParam(ctx, 'providerWorkspaceId');
    // Ids are int4 in the database: a larger canonical id names nothing (not a 500 from the cast).
    if (id > PG_INT_MAX) throw new ApiError('not_found', `No provider workspace ${id}.`);
    return pws.get(id, { workspaceId: idParam(ctx, 'workspaceId') });
  };

  router.get(base, async (ctx) => {
    parse(noQuery, queryObject(ctx.query));
    const rows = await pws.list({ workspaceId: idParam(ctx, 'workspaceId') });
    return { data: rows.map(toRecord) };
  });

  router.post(base, async (ctx) => {
    const body = parse(registerBody, ctx.body);
    const workspaceId = idParam(ctx, 'workspaceId');
    const organizationId = await organizationOfWorkspace(ctx.db, workspaceId);
    if (organizationId === null) throw new ApiError('not_found', `No workspace ${workspaceId}.`);
    const row = await pws.register(body, { organizationId, workspaceId });
    return { status: 201, data: toRecord(row) };
  });

  router.get(`${base}/{providerWorkspaceId}/preview`, async (ctx) => {
    const filters = previewFilters(ctx);
    const out = await pws.preview(await v2Pw(ctx), filters);
    return { data: out, pagination: pagination(out.page, out.limit, out.total) };
  });

  router.post(`${base}/{providerWorkspaceId}/sync`, async (ctx) => {
    parse(emptyBody, ctx.body);
    const pw = await v2Pw(ctx);
    return { status: 201, data: await pws.sync(pw, idParam(ctx, 'workspaceId'), svc.clock) };
  });

  router.get(`${base}/{providerWorkspaceId}/sync`, async (ctx) => {
    parse(noQuery, queryObject(ctx.query));
    return { data: await pws.latestSync(await v2Pw(ctx)) };
  });
}

/** /v1: a partner key's organization, every provider workspace of it. */
function registerV1(router: Router, pws: ProviderWorkspaces, svc: BackendServices): void {
  const orgOf = (ctx: Ctx) => {
    const org = ctx.identity?.organizationId;
    if (!org) throw new ApiError('unauthorized', 'No organization for this key.');
    return org;
  };
  const v1Pw = (ctx: Ctx) => {
    const raw = ctx.params.workspaceId;
    // Our ids are canonical decimals; any other string names no registration.
    if (!isDbId(raw)) throw new ApiError('not_found', `No workspace ${raw}.`);
    return pws.get(Number(raw), { organizationId: orgOf(ctx) }).catch((err) => {
      if (err instanceof ApiError && err.code === 'not_found') throw new ApiError('not_found', `No workspace ${raw}.`);
      throw err;
    });
  };

  router.post('/v1/workspaces', async (ctx) => {
    const body = parse(registerBody, ctx.body);
    const org = orgOf(ctx);
    const target = await defaultWorkspace(ctx.db, org);
    if (target === null)
      throw new ApiError('unprocessable_entity', 'The organization has no workspace to import mailboxes into.', {
        reason: 'no_workspace',
      });
    const row = await pws.register(body, { organizationId: org, workspaceId: target });
    return { status: 201, data: v1Record(row) };
  });

  router.get('/v1/workspaces/{workspaceId:str}/preview', async (ctx) => {
    const filters = previewFilters(ctx);
    return { data: await pws.preview(await v1Pw(ctx), filters) };
  });

  router.post('/v1/workspaces/{workspaceId:str}/sync', async (ctx) => {
    parse(emptyBody, ctx.body);
    const pw = await v1Pw(ctx);
    return { status: 201, data: v1Sync(await pws.sync(pw, null, svc.clock)) };
  });

  router.get('/v1/workspaces/{workspaceId:str}/sync', async (ctx) => {
    parse(noQuery, queryObject(ctx.query));
    return { data: v1Sync(await pws.latestSync(await v1Pw(ctx))) };
  });
}

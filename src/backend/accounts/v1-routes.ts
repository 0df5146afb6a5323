// /v1 email accounts: list, connect (SMTP/IMAP), status (single and bulk), tags, disconnect, delete.
import { ApiError } from '../../http/errors.js';
import type { Queryable, Row } from '../../db/types.js';
import { planOf } from '../../config/plans.js';
import { parse, queryObject, type Ctx, type Reply, type Router } from '../router.js';
import {
  accountIdParam,
  accountItems,
  accountStatuses,
  emptyBody,
  loadAccount,
  loadAccounts,
  notFound,
  orgOf,
  settle,
  statusesFor,
} from '../mailbox/index.js';
import {
  addressInUse,
  assignTagNames,
  deleteAccountById,
  deleteAccountsByIds,
  disconnectAccountById,
  insertPartnerMailbox,
  listOrganizationAccounts,
  oldestLiveWorkspace,
  providerWorkspaceOf,
  unassignTagNames,
} from './queries.js';
import { cancelPendingSends } from '../warmup/index.js';
import { sealMailbox } from '../credentials/index.js';
import { bulkDeleteBody, bulkStatusBody, connectBody, listQuery, tagsBody } from './v1-schemas.js';

/** A new mailbox's max, as on /v2: 40, or the plan's per-mailbox cap when lower. */
const DEFAULT_MAX_LIMIT = 40;

/** All ids must be the organization's (tag routes are all-or-nothing): 404 naming the missing ones. */
async function requireAll(db: Queryable, orgId: number, ids: number[], lock: boolean): Promise<Row[]> {
  const found = await loadAccounts(db, orgId, ids, lock);
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length === 1) throw notFound(missing[0]);
  if (missing.length)
    throw new ApiError('not_found', `Email accounts ${missing.join(', ')} not found.`, { emailAccountIds: missing });
  return ids.map((id) => found.get(id)!);
}

function uniqueNames(names: string[]): string[] {
  const seen = new Map<string, string>();
  for (const name of names) if (!seen.has(name.toLowerCase())) seen.set(name.toLowerCase(), name);
  return [...seen.values()];
}

async function listEmailAccounts(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const filters = parse(listQuery, queryObject(ctx.query, ['tags']));
  await settle(ctx.db, ctx.svc.clock.now());
  const { rows, total } = await listOrganizationAccounts(ctx.db, org, {
    search:
      filters.search !== undefined && filters.search.trim() !== '' ? filters.search.trim().toLowerCase() : undefined,
    statuses: filters.status ? statusesFor(filters.status) : undefined,
    tags: filters.tags?.map((tag) => tag.toLowerCase()),
    sort: filters.sort,
    sortBy: filters.sortBy,
    limit: filters.limit,
    page: filters.page,
  });
  return {
    data: {
      items: await accountItems(ctx.db, rows, ctx.svc.clock.now()),
      total,
      page: filters.page,
      limit: filters.limit,
      totalPages: Math.ceil(total / filters.limit),
    },
  };
}

async function connectEmailAccount(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const body = parse(connectBody, ctx.body ?? {});
  const row = await ctx.db.tx(async (tx) => {
    let workspaceId: number | null = null;
    let providerWorkspaceId: number | null = null;
    if (body.workspaceId !== null) {
      const providerWorkspace = await providerWorkspaceOf(tx, Number(body.workspaceId), org);
      if (!providerWorkspace)
        throw new ApiError('not_found', `Workspace ${body.workspaceId} not found.`, { workspaceId: body.workspaceId });
      providerWorkspaceId = providerWorkspace.id;
      workspaceId = providerWorkspace.workspace_id;
    }
    if (workspaceId === null) {
      // The partner key belongs to the organization, not a workspace: new mailboxes go to its oldest live workspace.
      workspaceId = await oldestLiveWorkspace(tx, org);
      if (workspaceId === null)
        throw new ApiError('unprocessable_entity', 'The organization has no workspace to connect a mailbox to.');
    }
    if (await addressInUse(tx, body.fromEmail))
      throw new ApiError('conflict', `${body.fromEmail} is already connected.`, { field: 'fromEmail' });
    const cap = planOf(ctx.svc.plans(), ctx.identity!.plan).plan.maxWarmupPerAccount;
    return insertPartnerMailbox(tx, workspaceId, providerWorkspaceId, {
      emailAddress: body.fromEmail,
      fromName: body.fromName,
      warmupMaxLimit: Math.min(DEFAULT_MAX_LIMIT, cap ?? DEFAULT_MAX_LIMIT),
      timeZone: body.timeZone ?? 'UTC',
      // The passwords are stored sealed, apart from the settings (src/backend/credentials/).
      sealed: sealMailbox(ctx.svc.credentials, body.smtp, body.imap),
      now: new Date(ctx.svc.clock.now()),
    });
  });
  ctx.svc.log.info({ emailAccountId: row.id, organizationId: org }, 'v1 mailbox connected');
  const [item] = await accountItems(ctx.db, [row], ctx.svc.clock.now());
  return { status: 201, data: item };
}

// The consent-link connect is not offered yet (spec: always 501); POST /v1/email-accounts connects.
async function connectByConsentLink(ctx: Ctx): Promise<Reply> {
  orgOf(ctx);
  throw new ApiError('not_implemented', 'Coming soon: connect the mailbox with POST /v1/email-accounts instead.');
}

async function bulkStatus(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const body = parse(bulkStatusBody, ctx.body ?? {});
  await settle(ctx.db, ctx.svc.clock.now());
  const found = await loadAccounts(ctx.db, org, body.emailAccountIds);
  const statuses = await accountStatuses(ctx.db, [...found.values()], ctx.svc.clock.now());
  const byId = new Map(statuses.map((status) => [status.emailAccountId, status]));
  // In the order of the input ids; an id that is not the organization's gets errorCode not_found.
  const results = body.emailAccountIds.map((id) => byId.get(id) ?? { emailAccountId: id, errorCode: 'not_found' });
  return { data: { results } };
}

async function bulkDelete(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const body = parse(bulkDeleteBody, ctx.body ?? {});
  const deleted = await ctx.db.tx(async (tx) => {
    const found = await loadAccounts(tx, org, body.emailAccountIds, true);
    await deleteAccountsByIds(tx, [...found.keys()]);
    return found;
  });
  ctx.svc.log.info({ organizationId: org, deleted: [...deleted.keys()] }, 'v1 mailboxes deleted');
  return {
    data: {
      results: body.emailAccountIds.map((id) =>
        deleted.has(id)
          ? { emailAccountId: id, deleted: true }
          : { emailAccountId: id, deleted: false, errorCode: 'not_found' },
      ),
    },
  };
}

async function assignTags(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const body = parse(tagsBody, ctx.body ?? {});
  const names = uniqueNames(body.tags);
  const accounts = await ctx.db.tx(async (tx) => {
    const accounts = await requireAll(tx, org, body.emailAccountIds, true);
    // Additive; an unknown name is created in the account's workspace (spec, rule 1).
    await assignTagNames(tx, accounts as { id: number; workspace_id: number }[], names);
    return accounts;
  });
  return { data: await accountItems(ctx.db, accounts, ctx.svc.clock.now()) };
}

async function unassignTags(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const body = parse(tagsBody, ctx.body ?? {});
  const lowerNames = uniqueNames(body.tags).map((name) => name.toLowerCase());
  const accounts = await ctx.db.tx(async (tx) => {
    const accounts = await requireAll(tx, org, body.emailAccountIds, true);
    // Only the listed names; unknown or unassigned names are ignored (spec, rule 1).
    await unassignTagNames(tx, body.emailAccountIds, lowerNames);
    return accounts;
  });
  return { data: await accountItems(ctx.db, accounts, ctx.svc.clock.now()) };
}

async function accountStatus(ctx: Ctx): Promise<Reply> {
  await settle(ctx.db, ctx.svc.clock.now(), accountIdParam(ctx));
  const account = await loadAccount(ctx.db, orgOf(ctx), accountIdParam(ctx));
  const [status] = await accountStatuses(ctx.db, [account], ctx.svc.clock.now());
  return { data: status };
}

async function disconnectEmailAccount(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const id = accountIdParam(ctx);
  if (ctx.body !== undefined) parse(emptyBody, ctx.body);
  const row = await ctx.db.tx(async (tx) => {
    await loadAccount(tx, org, id, true);
    // As /v2's disconnect: warmup stops and no start is pending; the account and its history stay (delete removes them).
    const disconnected = await disconnectAccountById(tx, id, new Date(ctx.svc.clock.now()));
    await cancelPendingSends(tx, [id]);
    return disconnected;
  });
  const [status] = await accountStatuses(ctx.db, [row], ctx.svc.clock.now());
  return { data: status };
}

async function deleteEmailAccount(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const id = accountIdParam(ctx);
  await ctx.db.tx(async (tx) => {
    await loadAccount(tx, org, id, true);
    await deleteAccountById(tx, id);
  });
  ctx.svc.log.info({ organizationId: org, emailAccountId: id }, 'v1 mailbox deleted');
  return { data: { emailAccountId: id, deleted: true } };
}

export function register(router: Router): void {
  router.get('/v1/email-accounts', listEmailAccounts);
  router.post('/v1/email-accounts', connectEmailAccount);
  router.post('/v1/email-accounts/oauth', connectByConsentLink);
  router.post('/v1/email-accounts/bulk-status', bulkStatus);
  router.post('/v1/email-accounts/bulk-delete', bulkDelete);
  router.post('/v1/email-accounts/tags/assign', assignTags);
  router.post('/v1/email-accounts/tags/unassign', unassignTags);
  router.get('/v1/email-accounts/{emailAccountId}/status', accountStatus);
  router.post('/v1/email-accounts/{emailAccountId}/disconnect', disconnectEmailAccount);
  router.delete('/v1/email-accounts/{emailAccountId}', deleteEmailAccount);
}

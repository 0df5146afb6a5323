// Accounts of /v2 (docs/decisions.md section 6): connect (SMTP/IMAP), list, read, disconnect, delete, DNS,
// setup score, and the two bulk routes. Every query is scoped by the path workspace: an account of another
// workspace is 404 not_found.
import { ApiError } from '../../http/errors.js';
import type { Row } from '../../db/index.js';
import { idParam, pagination, parse, queryObject, type Ctx, type Reply, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { orgOfWorkspace } from '../warmup/index.js';
import { assertTagsExist, replaceAccountTags } from '../tags/index.js';
import {
  accountRecord,
  getAccount,
  liveDns,
  replyRateView,
  setupScore,
  SETUP_SCORE_WEIGHTS,
  settleDueLimits,
} from '../mailbox/index.js';
import {
  accountsByIds,
  addressInUse,
  deleteAccount,
  disconnectAccount,
  insertMailbox,
  listAccounts,
  lockAccountIds,
} from './queries.js';
import { bulkStatusSchema, bulkTagsSchema, connectSchema, listQuerySchema } from './schemas.js';
import { sealMailbox } from '../credentials/index.js';
import { isoOrNull } from '../../db/time.js';

const WS = '/v2/workspaces/{workspaceId}';
/** The default warmupMaxLimit of a new mailbox, lowered to the plan's maxWarmupPerAccount. */
const DEFAULT_MAX_LIMIT = 40;

const notInWorkspace = (id: number) => ({
  accountId: id,
  error: { code: 'not_found', message: `No account ${id} in this workspace.` },
});

function statusItem(svc: BackendServices, account: Row) {
  return {
    accountId: account.id,
    emailAddress: account.email_address,
    provider: account.provider,
    status: account.status,
    verification: account.verification,
    warmupRequested: account.warmup_requested,
    warmupMaxLimit: account.warmup_max_limit,
    warmupCurrentLimit: account.warmup_current_limit,
    pendingWarmupMaxLimit: account.pending_max_limit ?? null,
    replyRate: replyRateView(svc, account).replyRate,
    connectionError: account.connection_error ?? null,
    lastConnectedAt: isoOrNull(account.last_connected_at),
  };
}

async function listAccountsRoute(ctx: Ctx): Promise<Reply> {
  const ws = idParam(ctx, 'workspaceId');
  const query = parse(listQuerySchema, queryObject(ctx.query));
  await settleDueLimits(ctx.db, new Date(ctx.svc.clock.now()), { workspaceId: ws });
  const { rows, total } = await listAccounts(ctx.db, ws, query, {
    limit: query.per_page,
    offset: (query.page - 1) * query.per_page,
  });
  return {
    data: rows.map((row) => accountRecord(ctx.svc, row)),
    pagination: pagination(query.page, query.per_page, total),
  };
}

async function connectAccount(ctx: Ctx): Promise<Reply> {
  const ws = idParam(ctx, 'workspaceId');
  const connect = parse(connectSchema, ctx.body);
  const org = await orgOfWorkspace(ctx.svc, ctx.db, ws);
  const cap = org.plan.maxWarmupPerAccount;
  const now = new Date(ctx.svc.clock.now());
  const conflict = () =>
    new ApiError(
      'conflict',
      'A mailbox with this address is already connected; a mailbox belongs to exactly one workspace.',
      { field: 'emailAddress' },
    );
  if (await addressInUse(ctx.db, connect.emailAddress)) throw conflict();
  let id: number;
  try {
    id = await insertMailbox(ctx.db, ws, {
      emailAddress: connect.emailAddress,
      fromName: connect.fromName,
      warmupMaxLimit: cap === null ? DEFAULT_MAX_LIMIT : Math.min(DEFAULT_MAX_LIMIT, cap),
      timeZone: connect.timeZone ?? 'UTC',
      // The passwords are stored sealed, apart from the settings (src/backend/credentials/).
      sealed: sealMailbox(ctx.svc.credentials, connect.smtp, connect.imap),
      now,
    });
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw conflict();
    throw err;
  }
  return { status: 201, data: accountRecord(ctx.svc, await getAccount(ctx.db, ws, id)) };
}

async function bulkStatus(ctx: Ctx): Promise<Reply> {
  const ws = idParam(ctx, 'workspaceId');
  const { accountIds } = parse(bulkStatusSchema, ctx.body);
  await settleDueLimits(ctx.db, new Date(ctx.svc.clock.now()), { workspaceId: ws });
  const rows = await accountsByIds(ctx.db, ws, accountIds);
  const byId = new Map(rows.map((row) => [row.id as number, row]));
  // One answer per id, in the order of the input ids.
  return { data: accountIds.map((id) => (byId.has(id) ? statusItem(ctx.svc, byId.get(id)!) : notInWorkspace(id))) };
}

async function bulkTags(ctx: Ctx): Promise<Reply> {
  const ws = idParam(ctx, 'workspaceId');
  const { accountIds, tagIds } = parse(bulkTagsSchema, ctx.body);
  const results = await ctx.db.tx(async (tx) => {
    // Unknown tag ids refuse the whole request; unknown accounts are answered per item.
    const tags = await assertTagsExist(tx, ws, tagIds);
    const done = new Map<number, unknown>();
    for (const id of await lockAccountIds(tx, ws, accountIds))
      done.set(id, { accountId: id, tags: await replaceAccountTags(tx, id, tags) });
    return accountIds.map((id) => done.get(id) ?? notInWorkspace(id));
  });
  return { data: results };
}

async function readAccount(ctx: Ctx): Promise<Reply> {
  const ws = idParam(ctx, 'workspaceId');
  const id = idParam(ctx, 'accountId');
  await settleDueLimits(ctx.db, new Date(ctx.svc.clock.now()), { accountId: id });
  return { data: accountRecord(ctx.svc, await getAccount(ctx.db, ws, id)) };
}

async function deleteAccountRoute(ctx: Ctx): Promise<Reply> {
  const ws = idParam(ctx, 'workspaceId');
  const id = idParam(ctx, 'accountId');
  const emailAddress = await deleteAccount(ctx.db, ws, id);
  if (emailAddress === null) throw new ApiError('not_found', `No account ${id} in this workspace.`, { accountId: id });
  return { data: { id, emailAddress, deleted: true } };
}

async function disconnectAccountRoute(ctx: Ctx): Promise<Reply> {
  const ws = idParam(ctx, 'workspaceId');
  const id = idParam(ctx, 'accountId');
  if (!(await disconnectAccount(ctx.db, ws, id, new Date(ctx.svc.clock.now())))) {
    throw new ApiError('not_found', `No account ${id} in this workspace.`, { accountId: id });
  }
  return { data: accountRecord(ctx.svc, await getAccount(ctx.db, ws, id)) };
}

async function readDns(ctx: Ctx): Promise<Reply> {
  const account = await getAccount(ctx.db, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'));
  const dns = await liveDns(ctx.svc, account.id, account.email_address);
  return {
    data: {
      accountId: account.id,
      domain: dns.domain,
      spf: dns.spf,
      dkim: dns.dkim,
      dmarc: dns.dmarc,
      mx: dns.mx,
      checkedAt: dns.checkedAt.toISOString(),
    },
  };
}

async function readSetupScore(ctx: Ctx): Promise<Reply> {
  const account = await getAccount(ctx.db, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'));
  const dns = await liveDns(ctx.svc, account.id, account.email_address);
  return {
    data: {
      accountId: account.id,
      score: setupScore(dns, account.verification),
      checks: { spf: dns.spf, dkim: dns.dkim, dmarc: dns.dmarc, mx: dns.mx, verification: account.verification },
      weights: SETUP_SCORE_WEIGHTS,
      checkedAt: dns.checkedAt.toISOString(),
    },
  };
}

export function register(router: Router): void {
  router.get(`${WS}/accounts`, listAccountsRoute);
  router.post(`${WS}/accounts`, connectAccount);
  router.post(`${WS}/accounts/bulk-status`, bulkStatus);
  router.post(`${WS}/accounts/bulk/tags`, bulkTags);
  router.get(`${WS}/accounts/{accountId}`, readAccount);
  router.delete(`${WS}/accounts/{accountId}`, deleteAccountRoute);
  router.post(`${WS}/accounts/{accountId}/disconnect`, disconnectAccountRoute);
  router.get(`${WS}/accounts/{accountId}/dns`, readDns);
  router.get(`${WS}/accounts/{accountId}/setup-score`, readSetupScore);
}

// Accounts of /v2 (issue 3): connect (SMTP/IMAP), list, read, disconnect, delete, DNS, setup score,
// and the two bulk routes. Every query is scoped by the path workspace: an account of another
// workspace is 404 not_found.
import { ApiError } from '../../http/errors.js';
import type { Row } from '../../db/index.js';
import { idParam, pagination, parse, queryObject, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { orgOfWorkspace } from '../warmup/org.js';
import { assertTagsExist, replaceAccountTags } from '../tags/store.js';
import { ACCOUNT_COLUMNS, accountRecord, getAccount, replyRateView, settleDueLimits } from './store.js';
import { bulkStatusSchema, bulkTagsSchema, connectSchema, listQuerySchema } from './schemas.js';
import { liveDns, setupScore, SETUP_SCORE_WEIGHTS } from './dns.js';
import { sealMailbox } from '../credentials/accounts.js';

const WS = '/v2/workspaces/{workspaceId}';
/** The default warmupMaxLimit of a new mailbox, lowered to the plan's maxWarmupPerAccount. */
const DEFAULT_MAX_LIMIT = 40;

const notInWorkspace = (id: number) => ({ accountId: id, error: { code: 'not_found', message: `No account ${id} in this workspace.` } });

function statusItem(svc: BackendServices, r: Row) {
  return {
    accountId: r.id,
    emailAddress: r.email_address,
    provider: r.provider,
    status: r.status,
    verification: r.verification,
    warmupRequested: r.warmup_requested,
    warmupMaxLimit: r.warmup_max_limit,
    warmupCurrentLimit: r.warmup_current_limit,
    pendingWarmupMaxLimit: r.pending_max_limit ?? null,
    replyRate: replyRateView(svc, r).replyRate,
    connectionError: r.connection_error ?? null,
    lastConnectedAt: r.last_connected_at ? new Date(r.last_connected_at).toISOString() : null,
  };
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => '\\' + c);
}

export function register(router: Router, _svc: BackendServices): void {
  router.get(`${WS}/accounts`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const f = parse(listQuerySchema, queryObject(ctx.query));
    await settleDueLimits(ctx.db, new Date(ctx.svc.clock.now()), { workspaceId: ws });
    const params: unknown[] = [ws];
    const where = ['a.workspace_id = $1'];
    if (f.status) where.push(`a.status = $${params.push(f.status)}`);
    if (f.maxLimitMin !== undefined) where.push(`a.warmup_max_limit >= $${params.push(f.maxLimitMin)}`);
    if (f.maxLimitMax !== undefined) where.push(`a.warmup_max_limit <= $${params.push(f.maxLimitMax)}`);
    if (f.tag !== undefined) {
      where.push(
        /^\d{1,9}$/.test(f.tag)
          ? `EXISTS (SELECT 1 FROM account_tags x WHERE x.account_id = a.id AND x.tag_id = $${params.push(Number(f.tag))})`
          : `EXISTS (SELECT 1 FROM account_tags x JOIN tags t ON t.id = x.tag_id WHERE x.account_id = a.id AND lower(t.name) = lower($${params.push(f.tag)}))`,
      );
    }
    if (f.search !== undefined) {
      const p = params.push(`%${escapeLike(f.search)}%`);
      where.push(`(a.email_address ILIKE $${p} ESCAPE '\\' OR a.from_name ILIKE $${p} ESCAPE '\\')`);
    }
    const cond = where.join(' AND ');
    const [{ n }] = await ctx.db.query(`SELECT count(*)::int AS n FROM accounts a WHERE ${cond}`, params);
    const rows = await ctx.db.query(
      `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE ${cond} ORDER BY a.id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, f.per_page, (f.page - 1) * f.per_page],
    );
    return { data: rows.map((r) => accountRecord(ctx.svc, r)), pagination: pagination(f.page, f.per_page, n) };
  });

  router.post(`${WS}/accounts`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const b = parse(connectSchema, ctx.body);
    const org = await orgOfWorkspace(ctx.svc, ctx.db, ws);
    const cap = org.plan.maxWarmupPerAccount;
    const max = cap === null ? DEFAULT_MAX_LIMIT : Math.min(DEFAULT_MAX_LIMIT, cap);
    const now = new Date(ctx.svc.clock.now());
    const conflict = () =>
      new ApiError('conflict', 'A mailbox with this address is already connected; a mailbox belongs to exactly one workspace.', { field: 'emailAddress' });
    // A mailbox belongs to exactly one workspace: the address is unique across every organization.
    const dup = await ctx.db.query(`SELECT 1 FROM accounts WHERE lower(email_address) = lower($1)`, [b.emailAddress]);
    if (dup.length) throw conflict();
    let id: number;
    // The passwords are stored sealed, apart from the settings (src/backend/credentials/).
    const m = sealMailbox(ctx.svc.credentials, b.smtp, b.imap);
    try {
      const rows = await ctx.db.query(
        `INSERT INTO accounts (workspace_id, email_address, from_name, provider, status, verification, warmup_max_limit, warmup_current_limit,
           time_zone, smtp, imap, smtp_password_sealed, imap_password_sealed, last_connected_at, created_at, updated_at)
         VALUES ($1, $2, $3, 'smtp', 'active', 'pending', $4, 5, $5, $6::jsonb, $7::jsonb, $8, $9, $10, $10, $10) RETURNING id`,
        [ws, b.emailAddress, b.fromName, max, b.timeZone ?? 'UTC', m.smtp, m.imap, m.smtpPasswordSealed, m.imapPasswordSealed, now],
      );
      id = rows[0].id;
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw conflict();
      throw err;
    }
    return { status: 201, data: accountRecord(ctx.svc, await getAccount(ctx.db, ws, id)) };
  });

  router.post(`${WS}/accounts/bulk-status`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const { accountIds } = parse(bulkStatusSchema, ctx.body);
    await settleDueLimits(ctx.db, new Date(ctx.svc.clock.now()), { workspaceId: ws });
    const rows = await ctx.db.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.workspace_id = $1 AND a.id = ANY($2::int[])`, [ws, accountIds]);
    const byId = new Map(rows.map((r) => [r.id as number, r]));
    // One answer per id, in the order of the input ids.
    return { data: accountIds.map((id) => (byId.has(id) ? statusItem(ctx.svc, byId.get(id)!) : notInWorkspace(id))) };
  });

  router.post(`${WS}/accounts/bulk/tags`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const { accountIds, tagIds } = parse(bulkTagsSchema, ctx.body);
    const results = await ctx.db.tx(async (q) => {
      // Unknown tag ids refuse the whole request; unknown accounts are answered per item.
      const tags = await assertTagsExist(q, ws, tagIds);
      const found = await q.query(`SELECT id FROM accounts WHERE workspace_id = $1 AND id = ANY($2::int[]) ORDER BY id FOR UPDATE`, [ws, accountIds]);
      const done = new Map<number, unknown>();
      for (const { id } of found) done.set(id, { accountId: id, tags: await replaceAccountTags(q, id, tags) });
      return accountIds.map((id) => done.get(id) ?? notInWorkspace(id));
    });
    return { data: results };
  });

  router.get(`${WS}/accounts/{accountId}`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const id = idParam(ctx, 'accountId');
    await settleDueLimits(ctx.db, new Date(ctx.svc.clock.now()), { accountId: id });
    return { data: accountRecord(ctx.svc, await getAccount(ctx.db, ws, id)) };
  });

  router.delete(`${WS}/accounts/{accountId}`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const id = idParam(ctx, 'accountId');
    const rows = await ctx.db.query(`DELETE FROM accounts WHERE id = $1 AND workspace_id = $2 RETURNING id, email_address`, [id, ws]);
    if (!rows.length) throw new ApiError('not_found', `No account ${id} in this workspace.`, { accountId: id });
    return { data: { id, emailAddress: rows[0].email_address, deleted: true } };
  });

  router.post(`${WS}/accounts/{accountId}/disconnect`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const id = idParam(ctx, 'accountId');
    const now = new Date(ctx.svc.clock.now());
    const rows = await ctx.db.query(
      // A disconnected mailbox keeps no credential: its OAuth token is dropped (the refresh job skips it).
      `UPDATE accounts SET status = 'disconnected', warmup_requested = false, auto_warmup = false,
         oauth_access_token_sealed = NULL, oauth_expires_at = NULL, updated_at = $3
       WHERE id = $1 AND workspace_id = $2 RETURNING id`,
      [id, ws, now],
    );
    if (!rows.length) throw new ApiError('not_found', `No account ${id} in this workspace.`, { accountId: id });
    return { data: accountRecord(ctx.svc, await getAccount(ctx.db, ws, id)) };
  });

  router.get(`${WS}/accounts/{accountId}/dns`, async (ctx) => {
    const acc = await getAccount(ctx.db, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'));
    const d = await liveDns(ctx.svc, acc.id, acc.email_address);
    return { data: { accountId: acc.id, domain: d.domain, spf: d.spf, dkim: d.dkim, dmarc: d.dmarc, mx: d.mx, checkedAt: d.checkedAt.toISOString() } };
  });

  router.get(`${WS}/accounts/{accountId}/setup-score`, async (ctx) => {
    const acc = await getAccount(ctx.db, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'));
    const d = await liveDns(ctx.svc, acc.id, acc.email_address);
    return {
      data: {
        accountId: acc.id,
        score: setupScore(d, acc.verification),
        checks: { spf: d.spf, dkim: d.dkim, dmarc: d.dmarc, mx: d.mx, verification: acc.verification },
        weights: SETUP_SCORE_WEIGHTS,
        checkedAt: d.checkedAt.toISOString(),
      },
    };
  });
}

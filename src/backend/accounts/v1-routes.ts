// /v1 email accounts: list, connect (SMTP/IMAP), status (single and bulk), tags, disconnect, delete.
import { ApiError } from '../../http/errors.js';
import type { Queryable, Row } from '../../db/types.js';
import { planOf } from '../../config/plans.js';
import { parse, queryObject, type Router } from '../router.js';
import {
  ORG_ACCOUNTS, accountIdParam, accountItems, accountStatuses, loadAccount, loadAccounts, notFound, orgOf,
  settle, statusesFor,
} from './v1-views.js';
import { cancelPendingSends } from '../warmup/index.js';
import { sealMailbox } from '../credentials/accounts.js';
import { bulkDeleteBody, bulkStatusBody, connectBody, emptyBody, listQuery, tagsBody } from '../v1/schemas.js';

const SORT_COLUMNS = { createdAt: 'a.created_at', fromEmail: 'lower(a.email_address)', fromName: 'lower(a.from_name)' } as const;

/** A new mailbox's max, as on /v2: 40, or the plan's per-mailbox cap when lower. */
const DEFAULT_MAX_LIMIT = 40;

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => '\\' + c);
}

/** All ids must be the organization's (tag routes are all-or-nothing): 404 naming the missing ones. */
async function requireAll(q: Queryable, orgId: number, ids: number[], lock: boolean): Promise<Row[]> {
  const found = await loadAccounts(q, orgId, ids, lock);
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length === 1) throw notFound(missing[0]);
  if (missing.length) throw new ApiError('not_found', `Email accounts ${missing.join(', ')} not found.`, { emailAccountIds: missing });
  return ids.map((id) => found.get(id)!);
}

function uniqueNames(names: string[]): string[] {
  const seen = new Map<string, string>();
  for (const n of names) if (!seen.has(n.toLowerCase())) seen.set(n.toLowerCase(), n);
  return [...seen.values()];
}

export function register(router: Router): void {
  router.get('/v1/email-accounts', async (ctx) => {
    const org = orgOf(ctx);
    const filters = parse(listQuery, queryObject(ctx.query, ['tags']));
    await settle(ctx.db, ctx.svc.clock.now());
    const where: string[] = [];
    const params: unknown[] = [org];
    if (filters.search !== undefined && filters.search.trim() !== '') {
      params.push(`%${escapeLike(filters.search.trim().toLowerCase())}%`);
      where.push(`(lower(a.email_address) LIKE $${params.length} OR lower(a.from_name) LIKE $${params.length})`);
    }
    if (filters.status) {
      params.push(statusesFor(filters.status));
      where.push(`a.status = ANY($${params.length}::text[])`);
    }
    if (filters.tags?.length) {
      params.push(filters.tags.map((t) => t.toLowerCase()));
      where.push(`EXISTS (SELECT 1 FROM account_tags at JOIN tags t ON t.id = at.tag_id
                   WHERE at.account_id = a.id AND lower(t.name) = ANY($${params.length}::text[]))`);
    }
    const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const [{ total }] = await ctx.db.query(`SELECT count(*)::int AS total FROM ${ORG_ACCOUNTS} ${cond}`, params);
    const rows = await ctx.db.query(
      `SELECT a.* FROM ${ORG_ACCOUNTS} ${cond}
        ORDER BY ${SORT_COLUMNS[filters.sort]} ${filters.sortBy}, a.id ${filters.sortBy}
        LIMIT ${filters.limit} OFFSET ${(filters.page - 1) * filters.limit}`,
      params,
    );
    return {
      data: {
        items: await accountItems(ctx.db, rows, ctx.svc.clock.now()),
        total,
        page: filters.page,
        limit: filters.limit,
        totalPages: Math.ceil(total / filters.limit),
      },
    };
  });

  router.post('/v1/email-accounts', async (ctx) => {
    const org = orgOf(ctx);
    const body = parse(connectBody, ctx.body ?? {});
    const row = await ctx.db.tx(async (q) => {
      let workspaceId: number | null = null;
      let providerWorkspaceId: number | null = null;
      if (body.workspaceId !== null) {
        const pw = await q.query(
          `SELECT p.id, p.workspace_id FROM provider_workspaces p LEFT JOIN workspaces w ON w.id = p.workspace_id
            WHERE p.id = $1 AND p.organization_id = $2 AND (p.workspace_id IS NULL OR w.deleted_at IS NULL)`,
          [Number(body.workspaceId), org],
        );
        if (!pw.length) throw new ApiError('not_found', `Workspace ${body.workspaceId} not found.`, { workspaceId: body.workspaceId });
        providerWorkspaceId = pw[0].id;
        workspaceId = pw[0].workspace_id;
      }
      if (workspaceId === null) {
        // The partner key belongs to the organization, not a workspace: new mailboxes go to its oldest live workspace.
        const ws = await q.query(`SELECT id FROM workspaces WHERE organization_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT 1`, [org]);
        if (!ws.length) throw new ApiError('unprocessable_entity', 'The organization has no workspace to connect a mailbox to.');
        workspaceId = ws[0].id as number;
      }
      const dup = await q.query(`SELECT 1 FROM accounts WHERE lower(email_address) = lower($1)`, [body.fromEmail]);
      if (dup.length) throw new ApiError('conflict', `${body.fromEmail} is already connected.`, { field: 'fromEmail' });
      const cap = planOf(ctx.svc.plans(), ctx.identity!.plan).plan.maxWarmupPerAccount;
      const now = new Date(ctx.svc.clock.now());
      // The passwords are stored sealed, apart from the settings (src/backend/credentials/).
      const m = sealMailbox(ctx.svc.credentials, body.smtp, body.imap);
      const inserted = await q.query(
        `INSERT INTO accounts (workspace_id, email_address, from_name, provider, status, verification, warmup_max_limit, warmup_current_limit,
           time_zone, smtp, imap, smtp_password_sealed, imap_password_sealed, provider_workspace_id, last_connected_at, created_at, updated_at)
         VALUES ($1, $2, $3, 'smtp', 'active', 'pending', $4, 5, $5, $6::jsonb, $7::jsonb, $8, $9, $10, $11, $11, $11) RETURNING *`,
        [workspaceId, body.fromEmail, body.fromName, Math.min(DEFAULT_MAX_LIMIT, cap ?? DEFAULT_MAX_LIMIT), body.timeZone ?? 'UTC',
          m.smtp, m.imap, m.smtpPasswordSealed, m.imapPasswordSealed, providerWorkspaceId, now],
      );
      return inserted[0];
    });
    ctx.svc.log.info({ emailAccountId: row.id, organizationId: org }, 'v1 mailbox connected');
    const [item] = await accountItems(ctx.db, [row], ctx.svc.clock.now());
    return { status: 201, data: item };
  });

  // The consent-link connect is not offered yet (spec: always 501); POST /v1/email-accounts connects.
  router.post('/v1/email-accounts/oauth', async (ctx) => {
    orgOf(ctx);
    throw new ApiError('not_implemented', 'Coming soon: connect the mailbox with POST /v1/email-accounts instead.');
  });

  router.post('/v1/email-accounts/bulk-status', async (ctx) => {
    const org = orgOf(ctx);
    const body = parse(bulkStatusBody, ctx.body ?? {});
    await settle(ctx.db, ctx.svc.clock.now());
    const found = await loadAccounts(ctx.db, org, body.emailAccountIds);
    const statuses = await accountStatuses(ctx.db, [...found.values()], ctx.svc.clock.now());
    const byId = new Map(statuses.map((s) => [s.emailAccountId, s]));
    // In the order of the input ids; an id that is not the organization's gets errorCode not_found.
    const results = body.emailAccountIds.map((id) => byId.get(id) ?? { emailAccountId: id, errorCode: 'not_found' });
    return { data: { results } };
  });

  router.post('/v1/email-accounts/bulk-delete', async (ctx) => {
    const org = orgOf(ctx);
    const body = parse(bulkDeleteBody, ctx.body ?? {});
    const deleted = await ctx.db.tx(async (q) => {
      const found = await loadAccounts(q, org, body.emailAccountIds, true);
      if (found.size) await q.query(`DELETE FROM accounts WHERE id = ANY($1::int[])`, [[...found.keys()]]);
      return found;
    });
    ctx.svc.log.info({ organizationId: org, deleted: [...deleted.keys()] }, 'v1 mailboxes deleted');
    return {
      data: {
        results: body.emailAccountIds.map((id) =>
          deleted.has(id) ? { emailAccountId: id, deleted: true } : { emailAccountId: id, deleted: false, errorCode: 'not_found' },
        ),
      },
    };
  });

  router.post('/v1/email-accounts/tags/assign', async (ctx) => {
    const org = orgOf(ctx);
    const body = parse(tagsBody, ctx.body ?? {});
    const names = uniqueNames(body.tags);
    const lower = names.map((n) => n.toLowerCase());
    const accounts = await ctx.db.tx(async (q) => {
      const accounts = await requireAll(q, org, body.emailAccountIds, true);
      // Additive; an unknown name is created in the account's workspace (spec, rule 1).
      for (const ws of new Set(accounts.map((a) => a.workspace_id as number))) {
        for (const n of names) {
          await q.query(`INSERT INTO tags (workspace_id, name) VALUES ($1, $2) ON CONFLICT (workspace_id, lower(name)) DO NOTHING`, [ws, n]);
        }
      }
      await q.query(
        `INSERT INTO account_tags (account_id, tag_id)
         SELECT a.id, t.id FROM accounts a JOIN tags t ON t.workspace_id = a.workspace_id AND lower(t.name) = ANY($2::text[])
          WHERE a.id = ANY($1::int[])
         ON CONFLICT DO NOTHING`,
        [body.emailAccountIds, lower],
      );
      await q.query(`UPDATE accounts SET updated_at = now() WHERE id = ANY($1::int[])`, [body.emailAccountIds]);
      return accounts;
    });
    return { data: await accountItems(ctx.db, accounts, ctx.svc.clock.now()) };
  });

  router.post('/v1/email-accounts/tags/unassign', async (ctx) => {
    const org = orgOf(ctx);
    const body = parse(tagsBody, ctx.body ?? {});
    const lower = uniqueNames(body.tags).map((n) => n.toLowerCase());
    const accounts = await ctx.db.tx(async (q) => {
      const accounts = await requireAll(q, org, body.emailAccountIds, true);
      // Only the listed names; unknown or unassigned names are ignored (spec, rule 1).
      await q.query(
        `DELETE FROM account_tags at USING tags t
          WHERE t.id = at.tag_id AND at.account_id = ANY($1::int[]) AND lower(t.name) = ANY($2::text[])`,
        [body.emailAccountIds, lower],
      );
      await q.query(`UPDATE accounts SET updated_at = now() WHERE id = ANY($1::int[])`, [body.emailAccountIds]);
      return accounts;
    });
    return { data: await accountItems(ctx.db, accounts, ctx.svc.clock.now()) };
  });

  router.get('/v1/email-accounts/{emailAccountId}/status', async (ctx) => {
    await settle(ctx.db, ctx.svc.clock.now(), accountIdParam(ctx));
    const a = await loadAccount(ctx.db, orgOf(ctx), accountIdParam(ctx));
    const [status] = await accountStatuses(ctx.db, [a], ctx.svc.clock.now());
    return { data: status };
  });

  router.post('/v1/email-accounts/{emailAccountId}/disconnect', async (ctx) => {
    const org = orgOf(ctx);
    const id = accountIdParam(ctx);
    if (ctx.body !== undefined) parse(emptyBody, ctx.body);
    const row = await ctx.db.tx(async (q) => {
      await loadAccount(q, org, id, true);
      // As /v2's disconnect: warmup stops and no start is pending; the account and its history stay (delete removes them).
      const rows = await q.query(
        `UPDATE accounts SET status = 'disconnected', warmup_requested = false, auto_warmup = false, updated_at = $2 WHERE id = $1 RETURNING *`,
        [id, new Date(ctx.svc.clock.now())],
      );
      await cancelPendingSends(q, [id]);
      return rows[0];
    });
    const [status] = await accountStatuses(ctx.db, [row], ctx.svc.clock.now());
    return { data: status };
  });

  router.delete('/v1/email-accounts/{emailAccountId}', async (ctx) => {
    const org = orgOf(ctx);
    const id = accountIdParam(ctx);
    await ctx.db.tx(async (q) => {
      await loadAccount(q, org, id, true);
      await q.query(`DELETE FROM accounts WHERE id = $1`, [id]);
    });
    ctx.svc.log.info({ organizationId: org, emailAccountId: id }, 'v1 mailbox deleted');
    return { data: { emailAccountId: id, deleted: true } };
  });
}

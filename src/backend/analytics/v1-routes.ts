// /v1 reports (single, bulk, CSV export), the account-wide dashboard and the health check.
// Report days are UTC calendar days; from and to are inclusive.
import { ApiError } from '../../http/errors.js';
import type { Queryable } from '../../db/types.js';
import { parse, queryObject, type Router } from '../router.js';
import { ORG_ACCOUNTS, accountIdParam, checkRange, loadAccount, loadAccounts, orgOf, rate } from '../accounts/index.js';
import { dateRange } from '../time.js';
import { bulkReportBody, rangeQuery } from '../v1/schemas.js';

export interface ReportDay {
  date: string;
  sent: number;
  inbox: number;
  received: number;
  spam: number;
  other: number;
  undelivered: number;
  replied: number;
  deliverabilityRate: number;
}

/**
 * Every day of the range for each account, zeros included. received = delivered to a recipient
 * mailbox (inbox + spam + other); other = delivered to another folder, which the recorded outcomes
 * (inbox, spam, bounced) never show, so it is 0; undelivered = bounced.
 */
export async function reportDays(q: Queryable, ids: number[], from: string, to: string, now: number): Promise<Map<number, ReportDay[]>> {
  const rows = ids.length
    ? await q.query(
        `SELECT account_id, to_char(sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS d,
                count(*)::int AS sent,
                count(*) FILTER (WHERE outcome = 'inbox')::int AS inbox,
                count(*) FILTER (WHERE outcome = 'spam')::int AS spam,
                count(*) FILTER (WHERE outcome = 'bounced')::int AS bounced,
                count(*) FILTER (WHERE replied)::int AS replied
           FROM warmup_messages
          WHERE account_id = ANY($1::int[]) AND sent_at >= $2 AND sent_at < $3 AND sent_at <= $4
          GROUP BY 1, 2`,
        [ids, new Date(`${from}T00:00:00Z`), new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000), new Date(now)],
      )
    : [];
  const agg = new Map(rows.map((r) => [`${r.account_id}/${r.d}`, r]));
  const days = dateRange(from, to);
  return new Map(
    ids.map((id) => [
      id,
      days.map((d) => {
        const r = agg.get(`${id}/${d}`) ?? { sent: 0, inbox: 0, spam: 0, bounced: 0, replied: 0 };
        const other = 0;
        return {
          date: d,
          sent: r.sent,
          inbox: r.inbox,
          received: r.inbox + r.spam + other,
          spam: r.spam,
          other,
          undelivered: r.bounced,
          replied: r.replied,
          deliverabilityRate: rate(r.inbox, r.sent),
        };
      }),
    ]),
  );
}

const csvField = (v: unknown) => {
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export function register(router: Router): void {
  router.get('/v1/reports/{emailAccountId}', async (ctx) => {
    const org = orgOf(ctx);
    const id = accountIdParam(ctx);
    const r = parse(rangeQuery, queryObject(ctx.query));
    checkRange(r.from, r.to, ['from', 'to']);
    await loadAccount(ctx.db, org, id);
    const days = await reportDays(ctx.db, [id], r.from, r.to, ctx.svc.clock.now());
    return { data: { emailAccountId: id, from: r.from, to: r.to, days: days.get(id) } };
  });

  router.post('/v1/reports/bulk', async (ctx) => {
    const org = orgOf(ctx);
    const body = parse(bulkReportBody, ctx.body ?? {});
    checkRange(body.from, body.to, ['from', 'to']);
    const found = await loadAccounts(ctx.db, org, body.emailAccountIds);
    const days = await reportDays(ctx.db, [...found.keys()], body.from, body.to, ctx.svc.clock.now());
    // In input order; an id that is not the organization's gets errorCode not_found.
    const reports = body.emailAccountIds.map((id) =>
      found.has(id) ? { emailAccountId: id, from: body.from, to: body.to, days: days.get(id) } : { emailAccountId: id, errorCode: 'not_found' },
    );
    return { data: { reports } };
  });

  router.get('/v1/reports/export', async (ctx) => {
    const org = orgOf(ctx);
    const r = parse(rangeQuery, queryObject(ctx.query));
    checkRange(r.from, r.to, ['from', 'to']);
    const accounts = await ctx.db.query(`SELECT a.id, a.email_address FROM ${ORG_ACCOUNTS} ORDER BY a.id`, [org]);
    const days = await reportDays(ctx.db, accounts.map((a) => a.id), r.from, r.to, ctx.svc.clock.now());
    const cols = ['emailAccountId', 'fromEmail', 'date', 'sent', 'inbox', 'received', 'spam', 'other', 'undelivered', 'replied', 'deliverabilityRate'];
    const lines = [cols.join(',')];
    for (const a of accounts) {
      for (const d of days.get(a.id)!) {
        lines.push([a.id, a.email_address, d.date, d.sent, d.inbox, d.received, d.spam, d.other, d.undelivered, d.replied, d.deliverabilityRate].map(csvField).join(','));
      }
    }
    return {
      raw: { contentType: 'text/csv; charset=utf-8', body: lines.join('\r\n') + '\r\n' },
      headers: { 'content-disposition': `attachment; filename="warmup-report-${r.from}-to-${r.to}.csv"` },
    };
  });

  router.get('/v1/dashboard', async (ctx) => {
    const org = orgOf(ctx);
    const [d] = await ctx.db.query(
      `SELECT count(*)::int AS total,
              count(*) FILTER (WHERE a.status = 'warming')::int AS warming,
              count(*) FILTER (WHERE a.status IN ('paused', 'disconnected'))::int AS paused,
              count(*) FILTER (WHERE a.status IN ('error', 'auth-expired'))::int AS errors,
              avg(s.score)::float8 AS avg_score
         FROM ${ORG_ACCOUNTS} LEFT JOIN v1_setup_scores s ON s.account_id = a.id`,
      [org],
    );
    return {
      data: {
        totalAccounts: d.total,
        activeWarmups: d.warming,
        pausedWarmups: d.paused,
        accountsWithErrors: d.errors,
        // The mean cached setup score of the accounts that have one; 0 when none has.
        avgSetupScore: d.avg_score == null ? 0 : Math.round(d.avg_score * 10) / 10,
      },
    };
  });

  router.get('/v1/health', async (ctx) => {
    orgOf(ctx);
    if (!(await ctx.db.ping())) throw new ApiError('service_unavailable', 'The database does not answer.', { database: 'down' });
    return { data: { status: 'ok', database: 'ok', time: new Date(ctx.svc.clock.now()).toISOString() } };
  });
}

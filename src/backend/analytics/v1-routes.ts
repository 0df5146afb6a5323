// /v1 reports (single, bulk, CSV export), the account-wide dashboard and the health check.
// Report days are UTC calendar days; from and to are inclusive.
import { ApiError } from '../../http/errors.js';
import type { Queryable } from '../../db/types.js';
import { parse, queryObject, type Ctx, type Reply, type Router } from '../router.js';
import { accountIdParam, checkRange, loadAccount, loadAccounts, orgOf, rate } from '../mailbox/index.js';
import { dateRange } from '../time.js';
import { bulkReportBody, rangeQuery } from './v1-schemas.js';
import { dashboardCounts, organizationAccounts, reportRows } from './queries.js';

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
export async function reportDays(
  db: Queryable,
  ids: number[],
  from: string,
  to: string,
  now: number,
): Promise<Map<number, ReportDay[]>> {
  const rows = await reportRows(db, ids, from, to, now);
  const byAccountAndDay = new Map(rows.map((row) => [`${row.account_id}/${row.d}`, row]));
  const days = dateRange(from, to);
  return new Map(
    ids.map((id) => [
      id,
      days.map((date) => {
        const counts = byAccountAndDay.get(`${id}/${date}`) ?? { sent: 0, inbox: 0, spam: 0, bounced: 0, replied: 0 };
        const other = 0;
        return {
          date,
          sent: counts.sent,
          inbox: counts.inbox,
          received: counts.inbox + counts.spam + other,
          spam: counts.spam,
          other,
          undelivered: counts.bounced,
          replied: counts.replied,
          deliverabilityRate: rate(counts.inbox, counts.sent),
        };
      }),
    ]),
  );
}

const csvField = (value: unknown) => {
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

export function register(router: Router): void {
  router.get('/v1/reports/{emailAccountId}', getReport);
  router.post('/v1/reports/bulk', bulkReports);
  router.get('/v1/reports/export', exportReports);
  router.get('/v1/dashboard', getDashboard);
  router.get('/v1/health', getHealth);
}

async function getReport(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const id = accountIdParam(ctx);
  const range = parse(rangeQuery, queryObject(ctx.query));
  checkRange(range.from, range.to, ['from', 'to']);
  await loadAccount(ctx.db, org, id);
  const days = await reportDays(ctx.db, [id], range.from, range.to, ctx.svc.clock.now());
  return { data: { emailAccountId: id, from: range.from, to: range.to, days: days.get(id) } };
}

async function bulkReports(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const body = parse(bulkReportBody, ctx.body ?? {});
  checkRange(body.from, body.to, ['from', 'to']);
  const found = await loadAccounts(ctx.db, org, body.emailAccountIds);
  const days = await reportDays(ctx.db, [...found.keys()], body.from, body.to, ctx.svc.clock.now());
  // In input order; an id that is not the organization's gets errorCode not_found.
  const reports = body.emailAccountIds.map((id) =>
    found.has(id)
      ? { emailAccountId: id, from: body.from, to: body.to, days: days.get(id) }
      : { emailAccountId: id, errorCode: 'not_found' },
  );
  return { data: { reports } };
}

async function exportReports(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const range = parse(rangeQuery, queryObject(ctx.query));
  checkRange(range.from, range.to, ['from', 'to']);
  const accounts = await organizationAccounts(ctx.db, org);
  const days = await reportDays(
    ctx.db,
    accounts.map((account) => account.id),
    range.from,
    range.to,
    ctx.svc.clock.now(),
  );
  return {
    raw: { contentType: 'text/csv; charset=utf-8', body: reportCsv(accounts, days) },
    headers: { 'content-disposition': `attachment; filename="warmup-report-${range.from}-to-${range.to}.csv"` },
  };
}

const CSV_COLUMNS = [
  'emailAccountId',
  'fromEmail',
  'date',
  'sent',
  'inbox',
  'received',
  'spam',
  'other',
  'undelivered',
  'replied',
  'deliverabilityRate',
];

/** The export's CSV: a header line, then one line per account and day, each line ended by CRLF. */
export function reportCsv(
  accounts: readonly { id: number; email_address: string }[],
  days: ReadonlyMap<number, ReportDay[]>,
): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const account of accounts) {
    for (const day of days.get(account.id)!) {
      lines.push(
        [
          account.id,
          account.email_address,
          day.date,
          day.sent,
          day.inbox,
          day.received,
          day.spam,
          day.other,
          day.undelivered,
          day.replied,
          day.deliverabilityRate,
        ]
          .map(csvField)
          .join(','),
      );
    }
  }
  return lines.join('\r\n') + '\r\n';
}

async function getDashboard(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const counts = await dashboardCounts(ctx.db, org);
  return {
    data: {
      totalAccounts: counts.total,
      activeWarmups: counts.warming,
      pausedWarmups: counts.paused,
      accountsWithErrors: counts.errors,
      // The mean cached setup score of the accounts that have one; 0 when none has.
      avgSetupScore: counts.avg_score == null ? 0 : Math.round(counts.avg_score * 10) / 10,
    },
  };
}

async function getHealth(ctx: Ctx): Promise<Reply> {
  orgOf(ctx);
  if (!(await ctx.db.ping()))
    throw new ApiError('service_unavailable', 'The database does not answer.', { database: 'down' });
  return { data: { status: 'ok', database: 'ok', time: new Date(ctx.svc.clock.now()).toISOString() } };
}

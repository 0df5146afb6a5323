// Analytics of a workspace, computed by SQL from `warmup_messages` (one row per warmup message a
// mailbox sent) over a rolling 30-day window that the caller cannot change (spec, Account
// deliverability record).
//
// Window: (now - 30 days, now], `now` being svc.clock.now(); a message counts when
// `sent_at > windowStart AND sent_at <= windowEnd`.
//
// Rates are percentages of `sent` (messages sent in the window), from 0 to 100, rounded to 2 decimals:
//   deliverabilityRate = 100 * inbox   / sent   (landed in the inbox)
//   spamRate           = 100 * spam    / sent   (landed in the spam folder)
//   bounceRate         = 100 * bounced / sent   (not delivered)
//   replyRate          = 100 * replied / sent   (overview, leaderboard, stats)
// Every message has exactly one outcome, so deliverabilityRate + spamRate + bounceRate = 100 (up to
// rounding) when sent > 0. With no sends every count and rate is 0 (never a 404, never null).
import type { Queryable } from '../../db/index.js';
import { ORG_ACCOUNTS } from '../mailbox/index.js';

export const WINDOW_DAYS = 30;

export interface Window {
  start: string;
  end: string;
}

export function windowAt(nowMs: number): Window {
  return { start: new Date(nowMs - WINDOW_DAYS * 86_400_000).toISOString(), end: new Date(nowMs).toISOString() };
}

export function windowJson(period: Window) {
  return { windowStart: period.start, windowEnd: period.end, windowDays: WINDOW_DAYS };
}

/** Rate in percent, 2 decimals, 0 when nothing was sent. */
const rate = (num: string, den = 'sent') =>
  `(CASE WHEN ${den} = 0 THEN 0 ELSE round(100.0 * ${num} / ${den}, 2) END)::float8`;

/** Per-account counts over the window, for the accounts of one workspace (optionally one account). */
const COUNTS = `
  SELECT wm.account_id,
         count(*)::int AS sent,
         (count(*) FILTER (WHERE wm.outcome = 'inbox'))::int AS inbox,
         (count(*) FILTER (WHERE wm.outcome = 'spam'))::int AS spam,
         (count(*) FILTER (WHERE wm.outcome = 'bounced'))::int AS bounced,
         (count(*) FILTER (WHERE wm.replied))::int AS replied
    FROM warmup_messages wm
    JOIN accounts a ON a.id = wm.account_id
   WHERE a.workspace_id = $1
     AND ($4::int IS NULL OR a.id = $4)
     AND wm.sent_at > $2::timestamptz AND wm.sent_at <= $3::timestamptz
   GROUP BY wm.account_id`;

const PER_ACCOUNT = `
  WITH m AS (${COUNTS}),
  c AS (
    SELECT a.id, a.email_address,
           coalesce(m.sent, 0) AS sent, coalesce(m.inbox, 0) AS inbox, coalesce(m.spam, 0) AS spam,
           coalesce(m.bounced, 0) AS bounced, coalesce(m.replied, 0) AS replied
      FROM accounts a LEFT JOIN m ON m.account_id = a.id
     WHERE a.workspace_id = $1 AND ($4::int IS NULL OR a.id = $4)
  )
  SELECT id, email_address, sent, inbox, spam, bounced, replied,
         ${rate('inbox')} AS deliverability_rate, ${rate('bounced')} AS bounce_rate,
         ${rate('spam')} AS spam_rate, ${rate('replied')} AS reply_rate
    FROM c`;

export interface DeliverabilityRecord {
  accountId: number;
  emailAddress: string;
  deliverabilityRate: number;
  bounceRate: number;
  spamRate: number;
  sent: number;
}

interface AccountRow {
  id: number;
  email_address: string;
  sent: number;
  inbox: number;
  spam: number;
  bounced: number;
  replied: number;
  deliverability_rate: number;
  bounce_rate: number;
  spam_rate: number;
  reply_rate: number;
}

function record(row: AccountRow): DeliverabilityRecord {
  return {
    accountId: row.id,
    emailAddress: row.email_address,
    deliverabilityRate: row.deliverability_rate,
    bounceRate: row.bounce_rate,
    spamRate: row.spam_rate,
    sent: row.sent,
  };
}

/**
 * One deliverability record per account of the workspace, by account id. The per-account route
 * calls this same function with the account's id, so its row is the workspace row (spec).
 */
export async function deliverability(
  db: Queryable,
  workspaceId: number,
  period: Window,
  accountId: number | null = null,
) {
  const rows = await db.query<AccountRow>(`${PER_ACCOUNT} ORDER BY id`, [
    workspaceId,
    period.start,
    period.end,
    accountId,
  ]);
  return rows.map(record);
}

export async function overview(db: Queryable, workspaceId: number, period: Window) {
  const [totals] = await db.query(
    `WITH m AS (${COUNTS}),
     s AS (
       SELECT coalesce(sum(sent), 0)::int AS sent, coalesce(sum(inbox), 0)::int AS inbox, coalesce(sum(spam), 0)::int AS spam,
              coalesce(sum(bounced), 0)::int AS bounced, coalesce(sum(replied), 0)::int AS replied,
              count(*)::int AS accounts_with_sends
         FROM m
     ),
     a AS (
       SELECT count(*)::int AS total,
              (count(*) FILTER (WHERE status = 'warming'))::int AS warming,
              (count(*) FILTER (WHERE status = 'paused'))::int AS paused,
              (count(*) FILTER (WHERE status IN ('error', 'auth-expired', 'disconnected')))::int AS with_errors
         FROM accounts WHERE workspace_id = $1
     )
     SELECT s.*, a.total, a.warming, a.paused, a.with_errors,
            ${rate('inbox')} AS deliverability_rate, ${rate('bounced')} AS bounce_rate,
            ${rate('spam')} AS spam_rate, ${rate('replied')} AS reply_rate
       FROM s, a`,
    [workspaceId, period.start, period.end, null],
  );
  return {
    ...windowJson(period),
    totalAccounts: totals.total,
    warmingAccounts: totals.warming,
    pausedAccounts: totals.paused,
    accountsWithErrors: totals.with_errors,
    accountsWithSends: totals.accounts_with_sends,
    sent: totals.sent,
    inbox: totals.inbox,
    spam: totals.spam,
    bounced: totals.bounced,
    replied: totals.replied,
    deliverabilityRate: totals.deliverability_rate,
    bounceRate: totals.bounce_rate,
    spamRate: totals.spam_rate,
    replyRate: totals.reply_rate,
  };
}

/**
 * Per-day series: one bucket per UTC calendar day the window touches, oldest first (31 buckets;
 * the first and the last are partial days). Only messages inside the window count, so the buckets
 * add up to the overview's totals.
 */
export async function trends(db: Queryable, workspaceId: number, period: Window) {
  const rows = await db.query(
    `WITH msgs AS (
       SELECT (wm.sent_at AT TIME ZONE 'UTC')::date AS day, wm.outcome, wm.replied
         FROM warmup_messages wm JOIN accounts a ON a.id = wm.account_id
        WHERE a.workspace_id = $1 AND wm.sent_at > $2::timestamptz AND wm.sent_at <= $3::timestamptz
     ),
     days AS (
       SELECT generate_series(($2::timestamptz AT TIME ZONE 'UTC')::date, ($3::timestamptz AT TIME ZONE 'UTC')::date, interval '1 day')::date AS day
     ),
     c AS (
       SELECT d.day,
              count(m.day)::int AS sent,
              (count(*) FILTER (WHERE m.outcome = 'inbox'))::int AS inbox,
              (count(*) FILTER (WHERE m.outcome = 'spam'))::int AS spam,
              (count(*) FILTER (WHERE m.outcome = 'bounced'))::int AS bounced,
              (count(*) FILTER (WHERE m.replied))::int AS replied
         FROM days d LEFT JOIN msgs m ON m.day = d.day
        GROUP BY d.day
     )
     SELECT to_char(day, 'YYYY-MM-DD') AS date, sent, inbox, spam, bounced, replied,
            ${rate('inbox')} AS deliverability_rate, ${rate('bounced')} AS bounce_rate,
            ${rate('spam')} AS spam_rate, ${rate('replied')} AS reply_rate
       FROM c ORDER BY day`,
    [workspaceId, period.start, period.end],
  );
  return {
    ...windowJson(period),
    days: rows.map((row) => ({
      date: row.date,
      sent: row.sent,
      inbox: row.inbox,
      spam: row.spam,
      bounced: row.bounced,
      replied: row.replied,
      deliverabilityRate: row.deliverability_rate,
      bounceRate: row.bounce_rate,
      spamRate: row.spam_rate,
      replyRate: row.reply_rate,
    })),
  };
}

/**
 * Accounts that sent in the window, ranked by deliverabilityRate (highest first), then by sent
 * (more first), then by account id. Ranks are 1..n without ties.
 */
export async function leaderboard(db: Queryable, workspaceId: number, period: Window, limit: number) {
  const rows = await db.query<AccountRow & { rank: number }>(
    `SELECT row_number() OVER (ORDER BY deliverability_rate DESC, sent DESC, id)::int AS rank, *
       FROM (${PER_ACCOUNT}) r
      WHERE sent > 0
      ORDER BY rank
      LIMIT $5`,
    [workspaceId, period.start, period.end, null, limit],
  );
  return rows.map((row) => ({
    rank: row.rank,
    ...record(row),
    inbox: row.inbox,
    spam: row.spam,
    bounced: row.bounced,
    replied: row.replied,
    replyRate: row.reply_rate,
  }));
}

/** One account's stats (null when the account is not in the workspace): its deliverability record plus the raw counts and a split by recipient ESP. */
export async function accountStats(db: Queryable, workspaceId: number, accountId: number, period: Window) {
  const [row] = await db.query<AccountRow>(PER_ACCOUNT, [workspaceId, period.start, period.end, accountId]);
  if (!row) return null;
  const esp = await db.query(
    `SELECT recipient_esp AS esp, sent, inbox, spam, bounced, replied,
            ${rate('inbox')} AS deliverability_rate
       FROM (
         SELECT wm.recipient_esp, count(*)::int AS sent,
                (count(*) FILTER (WHERE wm.outcome = 'inbox'))::int AS inbox,
                (count(*) FILTER (WHERE wm.outcome = 'spam'))::int AS spam,
                (count(*) FILTER (WHERE wm.outcome = 'bounced'))::int AS bounced,
                (count(*) FILTER (WHERE wm.replied))::int AS replied
           FROM warmup_messages wm JOIN accounts a ON a.id = wm.account_id
          WHERE a.id = $1 AND a.workspace_id = $2 AND wm.sent_at > $3::timestamptz AND wm.sent_at <= $4::timestamptz
          GROUP BY wm.recipient_esp
       ) e
      ORDER BY esp`,
    [accountId, workspaceId, period.start, period.end],
  );
  return {
    ...record(row),
    ...windowJson(period),
    inbox: row.inbox,
    spam: row.spam,
    bounced: row.bounced,
    replied: row.replied,
    replyRate: row.reply_rate,
    byRecipientEsp: esp.map((espRow) => ({
      esp: espRow.esp,
      sent: espRow.sent,
      inbox: espRow.inbox,
      spam: espRow.spam,
      bounced: espRow.bounced,
      replied: espRow.replied,
      deliverabilityRate: espRow.deliverability_rate,
    })),
  };
}

// The /v1 reports and dashboard (analytics/v1-routes.ts): whole UTC days, scoped by the partner key's
// organization.

/** Per account and UTC day of [from, to], messages sent up to `now`, by outcome. */
export async function reportRows(db: Queryable, accountIds: number[], from: string, to: string, now: number) {
  if (!accountIds.length) return [];
  return db.query<{
    account_id: number;
    d: string;
    sent: number;
    inbox: number;
    spam: number;
    bounced: number;
    replied: number;
  }>(
    `SELECT account_id, to_char(sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS d,
            count(*)::int AS sent,
            count(*) FILTER (WHERE outcome = 'inbox')::int AS inbox,
            count(*) FILTER (WHERE outcome = 'spam')::int AS spam,
            count(*) FILTER (WHERE outcome = 'bounced')::int AS bounced,
            count(*) FILTER (WHERE replied)::int AS replied
       FROM warmup_messages
      WHERE account_id = ANY($1::int[]) AND sent_at >= $2 AND sent_at < $3 AND sent_at <= $4
      GROUP BY 1, 2`,
    [accountIds, new Date(`${from}T00:00:00Z`), new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000), new Date(now)],
  );
}

/** Every account of the organization's live workspaces: id and address, by id. */
export async function organizationAccounts(db: Queryable, organizationId: number) {
  return db.query<{ id: number; email_address: string }>(
    `SELECT a.id, a.email_address FROM ${ORG_ACCOUNTS} ORDER BY a.id`,
    [organizationId],
  );
}

/** The organization's accounts by state, and the mean cached setup score (null when none has one). */
export async function dashboardCounts(db: Queryable, organizationId: number) {
  const [counts] = await db.query<{
    total: number;
    warming: number;
    paused: number;
    errors: number;
    avg_score: number | null;
  }>(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE a.status = 'warming')::int AS warming,
            count(*) FILTER (WHERE a.status IN ('paused', 'disconnected'))::int AS paused,
            count(*) FILTER (WHERE a.status IN ('error', 'auth-expired'))::int AS errors,
            avg(s.score)::float8 AS avg_score
       FROM ${ORG_ACCOUNTS} LEFT JOIN v1_setup_scores s ON s.account_id = a.id`,
    [organizationId],
  );
  return counts;
}

// The SQL of warmup: the organization and plan behind a workspace or an account, a mailbox's warmup
// state and settings, its warmup messages, the planned sends (v1_scheduled_sends) and sending windows,
// and the /v1 warmup routes' reads and writes. Column names passed to the update functions come from
// the route's code, never from the request.
import type { Queryable, Row } from '../../db/types.js';
import { ORG_ACCOUNTS } from '../mailbox/index.js';

// ---- the organization behind a workspace or an account ----------------------------------------------

/** The lock a read takes on the organization row until the transaction ends. */
export type OrgLock = 'none' | 'share' | 'update';
const ORG_LOCK: Record<OrgLock, string> = { none: '', share: 'FOR SHARE OF o', update: 'FOR UPDATE OF o' };

export interface OrgRow {
  id: number;
  /** The plan's name; null is the Free plan's limits. */
  plan: string | null;
}

/** The organization of the workspace (soft-deleted or not), or null. */
export async function organizationOfWorkspace(
  db: Queryable,
  workspaceId: number,
  lock: OrgLock,
): Promise<OrgRow | null> {
  const rows = await db.query<OrgRow & Row>(
    `SELECT o.id, o.plan FROM organizations o JOIN workspaces w ON w.organization_id = o.id WHERE w.id = $1 ${ORG_LOCK[lock]}`,
    [workspaceId],
  );
  return rows[0] ?? null;
}

/** The organization of the account's workspace, or null. */
export async function organizationOfAccount(db: Queryable, accountId: number, lock: OrgLock): Promise<OrgRow | null> {
  const rows = await db.query<OrgRow & Row>(
    `SELECT o.id, o.plan FROM organizations o JOIN workspaces w ON w.organization_id = o.id
    JOIN accounts a ON a.workspace_id = w.id WHERE a.id = $1 ${ORG_LOCK[lock]}`,
    [accountId],
  );
  return rows[0] ?? null;
}

/** Mailboxes warming now across the organization's live workspaces. */
export async function warmingCount(db: Queryable, orgId: number): Promise<number> {
  const rows = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM accounts a JOIN workspaces w ON w.id = a.workspace_id
    WHERE w.organization_id = $1 AND w.deleted_at IS NULL AND a.status = 'warming'`,
    [orgId],
  );
  return rows[0].n;
}

// ---- a mailbox's warmup state -------------------------------------------------------------------------

/** An enable or resume waits for the mailbox check: remembered, to start warmup when the check passes. */
export async function rememberWarmupRequest(db: Queryable, accountId: number, now: Date): Promise<void> {
  await db.query(`UPDATE accounts SET warmup_requested = true, updated_at = $2 WHERE id = $1`, [accountId, now]);
}

export async function withdrawWarmupRequest(db: Queryable, accountId: number, now: Date): Promise<void> {
  await db.query(`UPDATE accounts SET warmup_requested = false, updated_at = $2 WHERE id = $1`, [accountId, now]);
}

/** The mailbox warms from `now`; a remembered request and the automatic start are spent. */
export async function markWarming(db: Queryable, accountId: number, now: Date): Promise<void> {
  await db.query(
    `UPDATE accounts SET status = 'warming', warmup_requested = false, auto_warmup = false, warmup_started_at = $2, updated_at = $2 WHERE id = $1`,
    [accountId, now],
  );
}

export async function markPaused(db: Queryable, accountId: number, now: Date): Promise<void> {
  await db.query(`UPDATE accounts SET status = 'paused', warmup_requested = false, updated_at = $2 WHERE id = $1`, [
    accountId,
    now,
  ]);
}

/** The mailbox check's outcome; a failure also withdraws a remembered request. */
export async function storeVerification(
  db: Queryable,
  accountId: number,
  result: 'passed' | 'failed',
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE accounts SET verification = $2, verification_checked_at = $3, updated_at = $3,
         warmup_requested = CASE WHEN $2 = 'failed' THEN false ELSE warmup_requested END
       WHERE id = $1`,
    [accountId, result, now],
  );
}

/** The mailbox is to start warming by itself once its checks pass; false when there is no such account. */
export async function markAutoWarmup(db: Queryable, accountId: number): Promise<boolean> {
  const rows = await db.query(`UPDATE accounts SET auto_warmup = true WHERE id = $1 RETURNING id`, [accountId]);
  return rows.length > 0;
}

/**
 * Up to `limit` checked mailboxes, not warming, that wait for a start: a remembered request (first), or
 * the automatic start of an active one whose DNS was not checked since `dnsCheckedBefore`.
 */
export async function accountsDueToStart(db: Queryable, limit: number, dnsCheckedBefore: Date): Promise<number[]> {
  const rows = await db.query(
    `SELECT a.id FROM accounts a LEFT JOIN account_dns_checks d ON d.account_id = a.id
     WHERE a.verification = 'passed' AND a.status IN ('active', 'paused')
       AND (a.warmup_requested OR (a.auto_warmup AND a.status = 'active' AND (d.checked_at IS NULL OR d.checked_at < $2)))
     ORDER BY a.warmup_requested DESC, a.id LIMIT $1`,
    [limit, dnsCheckedBefore],
  );
  return rows.map((row) => row.id as number);
}

/** Warming mailboxes of live workspaces, with their max below v2's floor, by id. */
export async function warmingAccounts(db: Queryable): Promise<Row[]> {
  return db.query(
    `SELECT a.*, s.max_below_floor FROM accounts a JOIN workspaces w ON w.id = a.workspace_id AND w.deleted_at IS NULL
       LEFT JOIN v1_warmup_settings s ON s.account_id = a.id WHERE a.status = 'warming' ORDER BY a.id`,
  );
}

// ---- warmup settings and limits -----------------------------------------------------------------------

export interface StoredSettings {
  warmupMaxLimit: number;
  pendingMaxLimit: number | null;
  pendingEffectiveAt: Date | null;
  replyRateCustom: number | null;
}

export async function storeSettings(
  db: Queryable,
  accountId: number,
  settings: StoredSettings,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE accounts SET warmup_max_limit = $2, pending_max_limit = $3, pending_effective_at = $4, reply_rate_custom = $5, updated_at = $6 WHERE id = $1`,
    [
      accountId,
      settings.warmupMaxLimit,
      settings.pendingMaxLimit,
      settings.pendingEffectiveAt,
      settings.replyRateCustom,
      now,
    ],
  );
}

/** The first instant of the next local day in `timeZone` after `now` (PostgreSQL's tz database, DST-aware). */
export async function nextLocalMidnight(db: Queryable, now: Date, timeZone: string): Promise<Date> {
  const rows = await db.query(
    `SELECT (date_trunc('day', $1::timestamptz AT TIME ZONE $2) + interval '1 day') AT TIME ZONE $2 AS at`,
    [now, timeZone],
  );
  return rows[0].at as Date;
}

// ---- warmup messages ----------------------------------------------------------------------------------

export interface WarmupMessageRow {
  id: number;
  sent_at: Date;
  recipient_esp: string;
  outcome: string;
  replied: boolean;
}

export async function countWarmupMessages(db: Queryable, accountId: number): Promise<number> {
  const [{ n }] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM warmup_messages WHERE account_id = $1`,
    [accountId],
  );
  return n;
}

/** One page of the account's warmup messages, newest first. */
export async function warmupMessagesPage(
  db: Queryable,
  accountId: number,
  limit: number,
  offset: number,
): Promise<WarmupMessageRow[]> {
  return db.query<WarmupMessageRow & Row>(
    `SELECT id, sent_at, recipient_esp, outcome, replied FROM warmup_messages WHERE account_id = $1
     ORDER BY sent_at DESC, id DESC LIMIT $2 OFFSET $3`,
    [accountId, limit, offset],
  );
}

// ---- planned sends and sending windows ----------------------------------------------------------------

export interface TimeSlotRow {
  account_id: number;
  /** 0 = monday. */
  day: number;
  from_minute: number;
  to_minute: number;
}

/** The stored sending windows of the accounts; a day without a row has none stored. */
export async function timeSlotsOf(db: Queryable, accountIds: number[]): Promise<TimeSlotRow[]> {
  return db.query<TimeSlotRow & Row>(
    `SELECT account_id, day, from_minute, to_minute FROM v1_time_slots WHERE account_id = ANY($1::int[])`,
    [accountIds],
  );
}

/** The local minute of each send of the account on local `date` that is not cancelled (one per send). */
export async function plannedMinutes(db: Queryable, accountId: number, date: string): Promise<number[]> {
  const rows = await db.query(
    `SELECT local_minute FROM v1_scheduled_sends WHERE account_id = $1 AND local_date = $2 AND status <> 'cancelled'`,
    [accountId, date],
  );
  return rows.map((row) => row.local_minute as number);
}

export async function insertScheduledSend(
  db: Queryable,
  accountId: number,
  date: string,
  minute: number,
  at: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO v1_scheduled_sends (account_id, local_date, local_minute, scheduled_at) VALUES ($1, $2, $3, $4)`,
    [accountId, date, minute, at],
  );
}

export async function cancelPendingSends(db: Queryable, accountIds: number[]): Promise<void> {
  if (!accountIds.length) return;
  await db.query(
    `UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE account_id = ANY($1::int[]) AND status = 'pending'`,
    [accountIds],
  );
}

/** The pending sends of every mailbox that is not warming (whichever interface stopped it) are cancelled. */
export async function cancelSendsOfStoppedAccounts(db: Queryable): Promise<void> {
  await db.query(
    `UPDATE v1_scheduled_sends s SET status = 'cancelled' FROM accounts a
      WHERE a.id = s.account_id AND s.status = 'pending' AND a.status <> 'warming'`,
  );
}

export interface PendingSend {
  id: number;
  /** YYYY-MM-DD, the mailbox's local date. */
  localDate: string;
  localMinute: number;
}

export async function pendingSendsOf(db: Queryable, accountId: number): Promise<PendingSend[]> {
  const rows = await db.query(
    `SELECT id, to_char(local_date, 'YYYY-MM-DD') AS d, local_minute FROM v1_scheduled_sends WHERE account_id = $1 AND status = 'pending'`,
    [accountId],
  );
  return rows.map((row) => ({ id: row.id, localDate: row.d, localMinute: row.local_minute }));
}

export async function cancelSend(db: Queryable, sendId: number): Promise<void> {
  await db.query(`UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE id = $1`, [sendId]);
}

export async function rescheduleSend(db: Queryable, sendId: number, at: Date): Promise<void> {
  await db.query(`UPDATE v1_scheduled_sends SET scheduled_at = $2 WHERE id = $1`, [sendId, at]);
}

/** The local dates (YYYY-MM-DD) on which the account has pending sends. */
export async function pendingSendDates(db: Queryable, accountId: number): Promise<string[]> {
  const rows = await db.query(
    `SELECT DISTINCT to_char(local_date, 'YYYY-MM-DD') AS d FROM v1_scheduled_sends WHERE account_id = $1 AND status = 'pending'`,
    [accountId],
  );
  return rows.map((row) => row.d as string);
}

export async function cancelPendingSendsOn(db: Queryable, accountId: number, dates: string[]): Promise<void> {
  await db.query(
    `UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE account_id = $1 AND status = 'pending' AND local_date = ANY($2::date[])`,
    [accountId, dates],
  );
}

// ---- the /v1 warmup routes ----------------------------------------------------------------------------

/** An account of the organization's live workspaces joined with its v1 settings (nulls when it has none), or null. */
export async function accountWithV1Settings(
  db: Queryable,
  organizationId: number,
  accountId: number,
): Promise<Row | null> {
  const rows = await db.query(
    `SELECT a.*, s.strategy, s.max_below_floor, s.initial_limit, s.increase_by, s.language, s.content_industry, s.content_topics,
            s.google_volume, s.microsoft_volume, s.others_volume
       FROM ${ORG_ACCOUNTS} LEFT JOIN v1_warmup_settings s ON s.account_id = a.id WHERE a.id = $2`,
    [organizationId, accountId],
  );
  return rows[0] ?? null;
}

/** The account's warmup messages sent in [from, to), by outcome. */
export async function warmupCounts(db: Queryable, accountId: number, from: Date, to: Date) {
  const [counts] = await db.query<{ sent: number; inbox: number; spam: number; bounced: number; replied: number }>(
    `SELECT count(*)::int AS sent,
            count(*) FILTER (WHERE outcome = 'inbox')::int AS inbox,
            count(*) FILTER (WHERE outcome = 'spam')::int AS spam,
            count(*) FILTER (WHERE outcome = 'bounced')::int AS bounced,
            count(*) FILTER (WHERE replied)::int AS replied
       FROM warmup_messages WHERE account_id = $1 AND sent_at >= $2 AND sent_at < $3`,
    [accountId, from, to],
  );
  return counts;
}

/** The account's v1 strategy and max below v2's floor, or null when it has no v1 settings. */
export async function v1StrategyOf(
  db: Queryable,
  accountId: number,
): Promise<{ strategy: string; max_below_floor: number | null } | null> {
  const rows = await db.query(`SELECT strategy, max_below_floor FROM v1_warmup_settings WHERE account_id = $1`, [
    accountId,
  ]);
  return (rows[0] as { strategy: string; max_below_floor: number | null } | undefined) ?? null;
}

/** The account with its max below v2's floor, locked until the transaction ends. */
export async function lockAccountWithFloor(db: Queryable, accountId: number): Promise<Row | undefined> {
  const rows = await db.query(
    `SELECT a.*, s.max_below_floor FROM accounts a LEFT JOIN v1_warmup_settings s ON s.account_id = a.id WHERE a.id = $1 FOR UPDATE OF a`,
    [accountId],
  );
  return rows[0];
}

function assignments(columns: Record<string, unknown>, params: unknown[]): string[] {
  return Object.entries(columns).map(([column, value]) => `${column} = $${params.push(value)}`);
}

/** Sets the given account columns (`null` values included) and updated_at; nothing when there are none. */
export async function updateAccountColumns(
  db: Queryable,
  accountId: number,
  columns: Record<string, unknown>,
): Promise<void> {
  const params: unknown[] = [accountId];
  const set = assignments(columns, params);
  if (set.length) await db.query(`UPDATE accounts SET ${set.join(', ')}, updated_at = now() WHERE id = $1`, params);
}

/** Sets the given v1 settings columns and updated_at, creating the account's settings row first; nothing when there are none. */
export async function updateV1Settings(
  db: Queryable,
  accountId: number,
  columns: Record<string, unknown>,
): Promise<void> {
  const params: unknown[] = [accountId];
  const set = assignments(columns, params);
  if (!set.length) return;
  await db.query(`INSERT INTO v1_warmup_settings (account_id) VALUES ($1) ON CONFLICT (account_id) DO NOTHING`, [
    accountId,
  ]);
  await db.query(`UPDATE v1_warmup_settings SET ${set.join(', ')}, updated_at = now() WHERE account_id = $1`, params);
}

/** One weekday's sending window (0 = monday), in minutes of the local day. */
export async function upsertTimeSlot(
  db: Queryable,
  accountId: number,
  day: number,
  fromMinute: number,
  toMinute: number,
): Promise<void> {
  await db.query(
    `INSERT INTO v1_time_slots (account_id, day, from_minute, to_minute) VALUES ($1, $2, $3, $4)
     ON CONFLICT (account_id, day) DO UPDATE SET from_minute = $3, to_minute = $4`,
    [accountId, day, fromMinute, toMinute],
  );
}

// ---- the seed file's warmup history -------------------------------------------------------------------

export async function deleteWarmupMessages(db: Queryable, accountId: number): Promise<void> {
  await db.query(`DELETE FROM warmup_messages WHERE account_id=$1`, [accountId]);
}

export interface SeedWarmupActivity {
  accountId: number;
  days: number;
  perDay: number;
  spamPercent: number;
  bouncePercent: number;
  replyPercent: number;
}

/**
 * `perDay` messages a day for `days` days up to today, their recipients and outcomes spread by a
 * formula of day, message and account: the same seed gives the same history relative to today.
 */
export async function insertSeedWarmupMessages(db: Queryable, activity: SeedWarmupActivity): Promise<void> {
  await db.query(
    `INSERT INTO warmup_messages (account_id, sent_at, recipient_esp, outcome, replied)
        SELECT $1::int, date_trunc('day', now()) - make_interval(days => d) + make_interval(mins => 30 + n * 7),
          (ARRAY['google','microsoft','other','yahoo'])[1 + ((d * 7 + n * 3 + $1::int) % 4)],
          CASE WHEN ((d * 13 + n * 7 + $1::int) % 100) < $4::int THEN 'spam'
               WHEN ((d * 13 + n * 7 + $1::int) % 100) < $4::int + $5::int THEN 'bounced' ELSE 'inbox' END,
          ((d * 11 + n * 5 + $1::int) % 100) < $6::int
        FROM generate_series(0, $2::int - 1) AS d, generate_series(0, $3::int - 1) AS n`,
    [
      activity.accountId,
      activity.days,
      activity.perDay,
      activity.spamPercent,
      activity.bouncePercent,
      activity.replyPercent,
    ],
  );
}

// Pending warmup sends of warming mailboxes (v1_scheduled_sends): planned inside each day's sending
// window in the mailbox's local wall-clock time, moved when the time zone or a window changes,
// cancelled when warmup stops. A job keeps today's and tomorrow's plans filled.
import type { Queryable, Row } from '../../db/types.js';
import { addDays, localParts, weekdayOf, zonedToUtc } from '../time.js';

/**
 * The daily sending limit in force: warmup_current_limit, capped by a v1 maxSendingLimit below v2's
 * floor of 5 (kept in v1_warmup_settings.max_below_floor; `account` carries it when joined).
 */
export function dailyLimitOf(account: Row): number {
  const below = account.max_below_floor;
  return below != null && account.warmup_max_limit === 5
    ? Math.min(account.warmup_current_limit, below)
    : account.warmup_current_limit;
}

export const DEFAULT_WINDOW = { from: 9 * 60, to: 17 * 60 };
export interface Window {
  from: number;
  to: number;
}

/** The seven windows (0 = monday) of each account; days without a row have the default window. */
export async function windowsOf(db: Queryable, ids: number[]): Promise<Map<number, Window[]>> {
  const out = new Map<number, Window[]>(
    ids.map((id) => [id, Array.from({ length: 7 }, () => ({ ...DEFAULT_WINDOW }))]),
  );
  if (!ids.length) return out;
  const rows = await db.query(
    `SELECT account_id, day, from_minute, to_minute FROM v1_time_slots WHERE account_id = ANY($1::int[])`,
    [ids],
  );
  for (const row of rows) out.get(row.account_id)![row.day] = { from: row.from_minute, to: row.to_minute };
  return out;
}

/**
 * Plan the sends of local `date`: the day's limit spread evenly over the window. The plan is
 * deterministic, so a slot already planned (or made) is not planned twice and a slot whose time has
 * passed is skipped, not moved: running it again (the job) adds nothing. Never more than the limit.
 */
export async function planDay(
  db: Queryable,
  account: Row,
  date: string,
  sendingWindow: Window,
  now: number,
): Promise<number> {
  const limit = dailyLimitOf(account);
  const rows = await db.query(
    `SELECT local_minute FROM v1_scheduled_sends WHERE account_id = $1 AND local_date = $2 AND status <> 'cancelled'`,
    [account.id, date],
  );
  const have = new Map<number, number>();
  for (const row of rows) have.set(row.local_minute, (have.get(row.local_minute) ?? 0) + 1);
  let room = limit - rows.length;
  const span = sendingWindow.to - sendingWindow.from;
  let planned = 0;
  for (let slot = 0; slot < limit && room > 0; slot++) {
    const minute = sendingWindow.from + Math.floor(((slot + 0.5) * span) / limit);
    const taken = have.get(minute) ?? 0;
    if (taken > 0) {
      have.set(minute, taken - 1);
      continue;
    }
    const at = zonedToUtc(date, minute, account.time_zone);
    if (at <= now) continue;
    await db.query(
      `INSERT INTO v1_scheduled_sends (account_id, local_date, local_minute, scheduled_at) VALUES ($1, $2, $3, $4)`,
      [account.id, date, minute, new Date(at)],
    );
    planned++;
    room--;
  }
  return planned;
}

/** Today's (the rest of it) and tomorrow's sends, in the mailbox's local time. */
export async function planAhead(db: Queryable, account: Row, now: number, windows?: Window[]): Promise<number> {
  const ws = windows ?? (await windowsOf(db, [account.id])).get(account.id)!;
  const today = localParts(now, account.time_zone).date;
  let planned = 0;
  for (const date of [today, addDays(today, 1)]) planned += await planDay(db, account, date, ws[weekdayOf(date)], now);
  return planned;
}

export async function cancelPendingSends(db: Queryable, ids: number[]): Promise<void> {
  if (!ids.length) return;
  await db.query(
    `UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE account_id = ANY($1::int[]) AND status = 'pending'`,
    [ids],
  );
}

/**
 * A time-zone change keeps each pending send at its local wall-clock date and minute, now read in
 * the new zone, so its instant moves; a send whose new instant has already passed is cancelled.
 */
export async function shiftPendingSends(db: Queryable, accountId: number, tz: string, now: number): Promise<number> {
  const rows = await db.query(
    `SELECT id, to_char(local_date, 'YYYY-MM-DD') AS d, local_minute FROM v1_scheduled_sends WHERE account_id = $1 AND status = 'pending'`,
    [accountId],
  );
  for (const row of rows) {
    const at = zonedToUtc(row.d, row.local_minute, tz);
    if (at <= now) await db.query(`UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE id = $1`, [row.id]);
    else await db.query(`UPDATE v1_scheduled_sends SET scheduled_at = $2 WHERE id = $1`, [row.id, new Date(at)]);
  }
  return rows.length;
}

/** After windows of `days` changed: the pending sends of those weekdays are planned again in the new windows. */
export async function replanDays(db: Queryable, account: Row, days: number[], now: number): Promise<void> {
  const rows = await db.query(
    `SELECT DISTINCT to_char(local_date, 'YYYY-MM-DD') AS d FROM v1_scheduled_sends WHERE account_id = $1 AND status = 'pending'`,
    [account.id],
  );
  const dates = rows.map((r) => r.d as string).filter((d) => days.includes(weekdayOf(d)));
  if (!dates.length) return;
  await db.query(
    `UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE account_id = $1 AND status = 'pending' AND local_date = ANY($2::date[])`,
    [account.id, dates],
  );
  const ws = (await windowsOf(db, [account.id])).get(account.id)!;
  for (const localDate of dates) await planDay(db, account, localDate, ws[weekdayOf(localDate)], now);
}

// Pending warmup sends of warming mailboxes (v1_scheduled_sends): planned inside each day's sending
// window in the mailbox's local wall-clock time, moved when the time zone or a window changes,
// cancelled when warmup stops. A job keeps today's and tomorrow's plans filled.
import type { Queryable, Row } from '../../db/types.js';
import { addDays, localParts, weekdayOf, zonedToUtc } from '../time.js';

/**
 * The daily sending limit in force: warmup_current_limit, capped by a v1 maxSendingLimit below v2's
 * floor of 5 (kept in v1_warmup_settings.max_below_floor; `a` carries it when joined).
 */
export function dailyLimitOf(a: Row): number {
  const below = a.max_below_floor;
  return below != null && a.warmup_max_limit === 5 ? Math.min(a.warmup_current_limit, below) : a.warmup_current_limit;
}

export const DEFAULT_WINDOW = { from: 9 * 60, to: 17 * 60 };
export interface Window {
  from: number;
  to: number;
}

/** The seven windows (0 = monday) of each account; days without a row have the default window. */
export async function windowsOf(q: Queryable, ids: number[]): Promise<Map<number, Window[]>> {
  const out = new Map<number, Window[]>(ids.map((id) => [id, Array.from({ length: 7 }, () => ({ ...DEFAULT_WINDOW }))]));
  if (!ids.length) return out;
  const rows = await q.query(`SELECT account_id, day, from_minute, to_minute FROM v1_time_slots WHERE account_id = ANY($1::int[])`, [ids]);
  for (const r of rows) out.get(r.account_id)![r.day] = { from: r.from_minute, to: r.to_minute };
  return out;
}

/**
 * Plan the sends of local `date`: the day's limit spread evenly over the window. The plan is
 * deterministic, so a slot already planned (or made) is not planned twice and a slot whose time has
 * passed is skipped, not moved: running it again (the job) adds nothing. Never more than the limit.
 */
export async function planDay(q: Queryable, a: Row, date: string, w: Window, now: number): Promise<number> {
  const limit = dailyLimitOf(a);
  const rows = await q.query(
    `SELECT local_minute FROM v1_scheduled_sends WHERE account_id = $1 AND local_date = $2 AND status <> 'cancelled'`,
    [a.id, date],
  );
  const have = new Map<number, number>();
  for (const r of rows) have.set(r.local_minute, (have.get(r.local_minute) ?? 0) + 1);
  let room = limit - rows.length;
  const span = w.to - w.from;
  let planned = 0;
  for (let i = 0; i < limit && room > 0; i++) {
    const minute = w.from + Math.floor(((i + 0.5) * span) / limit);
    const n = have.get(minute) ?? 0;
    if (n > 0) {
      have.set(minute, n - 1);
      continue;
    }
    const at = zonedToUtc(date, minute, a.time_zone);
    if (at <= now) continue;
    await q.query(
      `INSERT INTO v1_scheduled_sends (account_id, local_date, local_minute, scheduled_at) VALUES ($1, $2, $3, $4)`,
      [a.id, date, minute, new Date(at)],
    );
    planned++;
    room--;
  }
  return planned;
}

/** Today's (the rest of it) and tomorrow's sends, in the mailbox's local time. */
export async function planAhead(q: Queryable, a: Row, now: number, windows?: Window[]): Promise<number> {
  const ws = windows ?? (await windowsOf(q, [a.id])).get(a.id)!;
  const today = localParts(now, a.time_zone).date;
  let n = 0;
  for (const date of [today, addDays(today, 1)]) n += await planDay(q, a, date, ws[weekdayOf(date)], now);
  return n;
}

export async function cancelPendingSends(q: Queryable, ids: number[]): Promise<void> {
  if (!ids.length) return;
  await q.query(`UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE account_id = ANY($1::int[]) AND status = 'pending'`, [ids]);
}

/**
 * A time-zone change keeps each pending send at its local wall-clock date and minute, now read in
 * the new zone, so its instant moves; a send whose new instant has already passed is cancelled.
 */
export async function shiftPendingSends(q: Queryable, accountId: number, tz: string, now: number): Promise<number> {
  const rows = await q.query(
    `SELECT id, to_char(local_date, 'YYYY-MM-DD') AS d, local_minute FROM v1_scheduled_sends WHERE account_id = $1 AND status = 'pending'`,
    [accountId],
  );
  for (const r of rows) {
    const at = zonedToUtc(r.d, r.local_minute, tz);
    if (at <= now) await q.query(`UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE id = $1`, [r.id]);
    else await q.query(`UPDATE v1_scheduled_sends SET scheduled_at = $2 WHERE id = $1`, [r.id, new Date(at)]);
  }
  return rows.length;
}

/** After windows of `days` changed: the pending sends of those weekdays are planned again in the new windows. */
export async function replanDays(q: Queryable, a: Row, days: number[], now: number): Promise<void> {
  const rows = await q.query(
    `SELECT DISTINCT to_char(local_date, 'YYYY-MM-DD') AS d FROM v1_scheduled_sends WHERE account_id = $1 AND status = 'pending'`,
    [a.id],
  );
  const dates = rows.map((r) => r.d as string).filter((d) => days.includes(weekdayOf(d)));
  if (!dates.length) return;
  await q.query(
    `UPDATE v1_scheduled_sends SET status = 'cancelled' WHERE account_id = $1 AND status = 'pending' AND local_date = ANY($2::date[])`,
    [a.id, dates],
  );
  const ws = (await windowsOf(q, [a.id])).get(a.id)!;
  for (const d of dates) await planDay(q, a, d, ws[weekdayOf(d)], now);
}


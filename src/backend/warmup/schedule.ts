// Pending warmup sends of warming mailboxes (v1_scheduled_sends): planned inside each day's sending
// window in the mailbox's local wall-clock time, moved when the time zone or a window changes,
// cancelled when warmup stops. A job keeps today's and tomorrow's plans filled.
import type { Queryable, Row } from '../../db/types.js';
import { addDays, localParts, weekdayOf, zonedToUtc } from '../time.js';
import {
  cancelPendingSendsOn,
  cancelSend,
  insertScheduledSend,
  pendingSendDates,
  pendingSendsOf,
  plannedMinutes,
  rescheduleSend,
  timeSlotsOf,
} from './queries.js';

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
  for (const row of await timeSlotsOf(db, ids))
    out.get(row.account_id)![row.day] = { from: row.from_minute, to: row.to_minute };
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
  const minutes = await plannedMinutes(db, account.id, date);
  const have = new Map<number, number>();
  for (const minute of minutes) have.set(minute, (have.get(minute) ?? 0) + 1);
  let room = limit - minutes.length;
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
    await insertScheduledSend(db, account.id, date, minute, new Date(at));
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

/**
 * A time-zone change keeps each pending send at its local wall-clock date and minute, now read in
 * the new zone, so its instant moves; a send whose new instant has already passed is cancelled.
 */
export async function shiftPendingSends(db: Queryable, accountId: number, tz: string, now: number): Promise<number> {
  const sends = await pendingSendsOf(db, accountId);
  for (const send of sends) {
    const at = zonedToUtc(send.localDate, send.localMinute, tz);
    if (at <= now) await cancelSend(db, send.id);
    else await rescheduleSend(db, send.id, new Date(at));
  }
  return sends.length;
}

/** After windows of `days` changed: the pending sends of those weekdays are planned again in the new windows. */
export async function replanDays(db: Queryable, account: Row, days: number[], now: number): Promise<void> {
  const dates = (await pendingSendDates(db, account.id)).filter((d) => days.includes(weekdayOf(d)));
  if (!dates.length) return;
  await cancelPendingSendsOn(db, account.id, dates);
  const ws = (await windowsOf(db, [account.id])).get(account.id)!;
  for (const localDate of dates) await planDay(db, account, localDate, ws[weekdayOf(localDate)], now);
}

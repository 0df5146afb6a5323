// Daily limits: a lowered warmupMaxLimit waits for the mailbox's next local midnight (spec, States: "Daily
// limit"). A plan change lowers every mailbox above the new cap at once: src/access/service/plan-cap.ts.
import type { Queryable } from '../../db/index.js';
import { settleDueLimits } from '../mailbox/queries.js';

/** The first instant of the next local day in `timeZone` after `now` (PostgreSQL's tz database, DST-aware). */
export async function nextLocalMidnight(db: Queryable, now: Date, timeZone: string): Promise<Date> {
  const rows = await db.query(
    `SELECT (date_trunc('day', $1::timestamptz AT TIME ZONE $2) + interval '1 day') AT TIME ZONE $2 AS at`,
    [now, timeZone],
  );
  return rows[0].at as Date;
}

/** The job's work: every pending lowered max whose local midnight has come takes effect. */
export async function applyDueLimits(db: Queryable, now: Date): Promise<number[]> {
  return settleDueLimits(db, now);
}

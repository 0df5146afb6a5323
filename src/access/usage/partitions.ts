// The usage history's partitions (docs/usage.md, Storage): made ahead of the writes (today and the next
// days for the minutes, this month and the next for hours and days), and dropped whole once every row
// in them is past its retention, never deleted row by row. One instance at a time does it, per schema
// (an advisory lock tried, not waited for: another instance is doing the same work).
import type { Db } from '../../db/types.js';
import type { Clock } from '../../ops/clock.js';
import {
  createPartition,
  dropPartitionsBefore,
  ORG_TABLES,
  tryUpkeepLock,
  USAGE_TABLES,
  type UsageTable,
} from './queries.js';

const DAY = 86_400_000;

export interface UsageRetention {
  /** USAGE_MINUTE_DAYS, USAGE_HOUR_DAYS, USAGE_DAY_DAYS: the least time each table keeps its rows. */
  minuteDays: number;
  hourDays: number;
  dayDays: number;
}

export interface UpkeepResult {
  created: number;
  dropped: string[];
}

/** Days of minute partitions made ahead: a day's upkeep may fail twice before the writer has to make one. */
export const AHEAD_DAYS = 3;
/** The upkeep runs hourly: a new day's partition is always there well before its first minute. */
export const UPKEEP_MS = 3_600_000;

/** The first instant of the month after `at`'s (UTC). */
function nextMonth(at: number): number {
  const d = new Date(at);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/**
 * Make the partitions ahead and drop the expired ones, as of `now`. Null when another instance holds the
 * upkeep's lock (it is doing this very work).
 */
export async function upkeepPartitions(
  db: Pick<Db, 'tx'>,
  now: number,
  r: UsageRetention,
): Promise<UpkeepResult | null> {
  return db.tx(async (q) => {
    if (!(await tryUpkeepLock(q))) return null;
    let created = 0;
    const make = async (t: UsageTable, at: number) => void ((await createPartition(q, t, new Date(at))) && created++);
    // The key tables and their sums per organization (ORG_TABLES) alike: same ranges, same retention.
    const dropped: string[] = [];
    for (const [minute, hour, day] of [USAGE_TABLES, ORG_TABLES]) {
      for (let d = 0; d <= AHEAD_DAYS; d++) await make(minute, now + d * DAY);
      for (const t of [hour, day]) {
        await make(t, now);
        await make(t, nextMonth(now));
      }
      dropped.push(
        ...(await dropPartitionsBefore(q, minute, new Date(now - r.minuteDays * DAY))),
        ...(await dropPartitionsBefore(q, hour, new Date(now - r.hourDays * DAY))),
        ...(await dropPartitionsBefore(q, day, new Date(now - r.dayDays * DAY))),
      );
    }
    return { created, dropped };
  });
}

/** The upkeep now and every `intervalMs`; a failure is reported and tried again at the next. */
export class PartitionUpkeep {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private db: Pick<Db, 'tx'>,
    private clock: Clock,
    private retention: UsageRetention,
    private report: (err: Error | null, result: UpkeepResult | null) => void = () => {},
  ) {}

  async run(): Promise<UpkeepResult | null> {
    try {
      const result = await upkeepPartitions(this.db, this.clock.now(), this.retention);
      this.report(null, result);
      return result;
    } catch (err) {
      this.report(err as Error, null);
      return null;
    }
  }

  async start(intervalMs = UPKEEP_MS): Promise<void> {
    await this.run();
    if (this.timer) return;
    this.timer = setInterval(() => void this.run(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

// A monthly quota is what a customer is billed against, and Redis may lose its counter: a restart
// without persistence, a failover to a replica that was still resynchronising. Each gateway instance
// therefore checkpoints the month's counts it saw to PostgreSQL (month_counts, migration 090) and reads
// back what the others wrote, every MONTH_CHECKPOINT_MS and when it stops (after the drain, as
// ../access/last-use.ts does for the last uses). The gate raises a month's counter that Redis answers
// below the highest count this instance knows (its checkpoint, or a count Redis answered it earlier)
// to that count, atomically, before spending (./redis/gate.ts, MONTH_LUA in ./redis/gate-lua.ts). What an outage
// can over-admit is then what the fleet admitted in the last two intervals before the loss, less what
// the restoring instance saw itself (docs/limits.md, Monthly quotas).
//
// The hot path: nothing for an organization without a quota; a Map lookup before and after a spend
// for one with a quota; a query on the first spend of a counter in a month on each instance.
import type { Queryable } from '../db/types.js';
import type { Clock } from '../ops/clock.js';

/** Default MONTH_CHECKPOINT_MS. */
export const MONTH_CHECKPOINT_MS = 5_000;
/** Held across failed checkpoints (database down) at most this many counters. */
const MAX_PENDING = 100_000;

/** What the Redis gate asks of the checkpoint (./redis/gate.ts, ./redis/limiter.ts). */
export interface MonthFloors {
  /** The count the month's counter `id` cannot be below in the month starting at `month` (ms); undefined until loaded. */
  floor(id: string, month: number): number | undefined;
  /** Load the last checkpoint of these counters (their first spend in the month on this instance). */
  load(ids: string[], month: number): Promise<void>;
  /** A count Redis answered for the counter: the requests admitted in the month so far. */
  seen(id: string, month: number, used: number): void;
  /** Stop the timer and write what is left. */
  stop(): Promise<void>;
}

export class MonthCheckpoint implements MonthFloors {
  /** The month (start, ms) the maps hold; a counter of an older month is written, never restored. */
  private month = 0;
  /** counter id -> the highest count known this month. */
  private floors = new Map<string, number>();
  /** "<month>\n<counter id>" -> the count not yet written. */
  private pending = new Map<string, number>();
  private loading = new Map<string, Promise<void>>();
  /** After a failed read, the first spends load nothing until then (no query per request while the database is down). */
  private retryAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  writes = 0;

  constructor(
    private db: Queryable,
    private clock: Clock,
    private intervalMs = MONTH_CHECKPOINT_MS,
    private onError: (err: Error) => void = () => {},
  ) {}

  floor(id: string, month: number): number | undefined {
    return month === this.month ? this.floors.get(id) : undefined;
  }

  private turn(month: number): boolean {
    if (month < this.month) return false;
    if (month > this.month) {
      this.month = month;
      this.floors = new Map();
      this.loading = new Map();
    }
    return true;
  }

  async load(ids: string[], month: number): Promise<void> {
    if (!this.turn(month)) return;
    const waits: Promise<void>[] = [];
    const fresh: string[] = [];
    for (const id of ids) {
      if (this.floors.has(id)) continue;
      const inFlight = this.loading.get(id);
      if (inFlight) waits.push(inFlight);
      else if (!fresh.includes(id)) fresh.push(id);
    }
    if (fresh.length > 0 && this.clock.now() >= this.retryAt) {
      const read = this.read(fresh, month);
      for (const id of fresh) this.loading.set(id, read);
      waits.push(read);
    }
    await Promise.all(waits);
  }

  private async read(ids: string[], month: number): Promise<void> {
    try {
      const rows = await this.db.query<{ counter_id: string; used: number | string }>(
        'SELECT counter_id, used FROM month_counts WHERE month_start = $1 AND counter_id = ANY($2::text[])',
        [new Date(month), ids],
      );
      if (month !== this.month) return;
      for (const id of ids) if (!this.floors.has(id)) this.floors.set(id, 0);
      for (const r of rows) this.raise(r.counter_id, Number(r.used));
    } catch (err) {
      this.retryAt = this.clock.now() + this.intervalMs;
      this.onError(err as Error);
    } finally {
      for (const id of ids) if (this.loading.get(id) !== undefined) this.loading.delete(id);
    }
  }

  private raise(id: string, used: number): void {
    if (used > (this.floors.get(id) ?? 0)) this.floors.set(id, used);
  }

  seen(id: string, month: number, used: number): void {
    if (month !== this.month && !this.turn(month)) return;
    const known = this.floors.get(id);
    if (known !== undefined && used <= known) return;
    this.floors.set(id, used);
    const key = `${month}\n${id}`;
    if (this.pending.size < MAX_PENDING || this.pending.has(key)) this.pending.set(key, used);
  }

  /** Write the counts seen since the last checkpoint, then read back the fleet's for this month's counters. */
  flush(): Promise<void> {
    const run = async (): Promise<void> => {
      const batch = this.pending;
      this.pending = new Map();
      try {
        if (batch.size > 0) {
          const ids: string[] = [];
          const months: Date[] = [];
          const used: number[] = [];
          for (const [key, n] of batch) {
            const nl = key.indexOf('\n');
            months.push(new Date(Number(key.slice(0, nl))));
            ids.push(key.slice(nl + 1));
            used.push(n);
          }
          await this.db.query(
            `INSERT INTO month_counts (counter_id, month_start, used)
             SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[])
             ON CONFLICT (counter_id, month_start) DO UPDATE
               SET used = greatest(month_counts.used, excluded.used), updated_at = now()`,
            [ids, months, used],
          );
          this.writes++;
        }
        // The others' counts: the floor this instance restores a lost counter to.
        const month = this.month;
        const known = [...this.floors.keys()];
        if (known.length > 0) {
          const rows = await this.db.query<{ counter_id: string; used: number | string }>(
            'SELECT counter_id, used FROM month_counts WHERE month_start = $1 AND counter_id = ANY($2::text[])',
            [new Date(month), known],
          );
          if (month === this.month) for (const r of rows) this.raise(r.counter_id, Number(r.used));
        }
      } catch (err) {
        for (const [key, n] of batch) if ((this.pending.get(key) ?? 0) < n) this.pending.set(key, n);
        this.onError(err as Error);
      }
    };
    // One flush at a time: a stop() during a timed flush waits for it, then writes what came after.
    const next = (this.flushing ?? Promise.resolve()).then(run);
    const tracked: Promise<void> = next.finally(() => {
      if (this.flushing === tracked) this.flushing = null;
    });
    this.flushing = tracked;
    return next;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}

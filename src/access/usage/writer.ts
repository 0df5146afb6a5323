// The usage history's writer (docs/usage.md, Storage): each answered request is one increment of an
// in-memory count per (minute, key, outcome), and every flush adds what was counted to the minute, hour
// and day tables in one transaction, one upsert statement each (count = count + EXCLUDED.count). So the
// database sees a few statements per instance per flush whatever the traffic, the sums over instances
// are exact, and the hours and days never lag behind the minutes. The same transaction adds the
// batch summed per organization to usage_org_minute, _hour and _day (migration 101), which the
// organizations' charts read, so those are the exact sums of the key tables at every commit. Batched as src/access/last-use.ts
// batches lastUsedAt: a failed flush keeps its counts for the next, and stopping flushes, so a SIGTERM
// loses nothing.
import type { Db } from '../../db/types.js';
import type { Clock } from '../../ops/clock.js';
import { outcomeOf, type GatewayRoutes, type UsageApi, type UsageTrace } from './outcome.js';
import {
  addOrgUsage,
  addUsage,
  createPartition,
  isMissingPartition,
  ORG_TABLES,
  USAGE_TABLES,
  type OrgUsageRows,
  type UsageRows,
} from './queries.js';

/** Counts held across failed flushes (database down), as rows of (minute, key, outcome), at most this many. */
export const MAX_PENDING_ROWS = 200_000;
/** Outcome ids fit in the low 7 bits of a count's map key (there are some 60 outcomes). */
const OUTCOME_BITS = 128;
const OTHER = 'refused_other';
const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** One flush's worth: epoch minute -> (key id * 128 + outcome id) -> count, and each key's organization. */
interface Counts {
  minutes: Map<number, Map<number, number>>;
  orgOf: Map<number, number>;
  rows: number;
}

const empty = (): Counts => ({ minutes: new Map(), orgOf: new Map(), rows: 0 });

export interface UsageWriterOptions {
  db: Pick<Db, 'tx'>;
  clock: Clock;
  /** The paths of the routes the gateway answers itself (outcome `answered`); read at each request. */
  answeredRoutes?: () => GatewayRoutes;
  maxPendingRows?: number;
  /** A flush failed: its counts are kept for the next. */
  onError?: (err: Error) => void;
  /** Counts dropped because MAX_PENDING_ROWS were held already (requests, not rows). */
  onDrop?: (requests: number) => void;
}

export class UsageWriter {
  private counts = empty();
  private curMinute = -1;
  private cur: Map<number, number> | null = null;
  private readonly outcomeIds = new Map<string, number>();
  private readonly outcomes: string[] = [];
  private readonly maxRows: number;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private droppedSinceReport = 0;
  /** Flushes written, and requests dropped beyond the cap, since the start. */
  writes = 0;
  dropped = 0;

  constructor(private o: UsageWriterOptions) {
    this.maxRows = o.maxPendingRows ?? MAX_PENDING_ROWS;
  }

  /** The hot path (GatewayDeps.usage): one answered request. */
  readonly record = (api: UsageApi, trace: UsageTrace, status: number): void => {
    const outcome = outcomeOf(api, trace, status, this.o.answeredRoutes?.());
    const id = this.outcomeIds.get(outcome) ?? this.outcomeId(outcome);
    const keyId = trace.keyId ?? 0;
    const minute = Math.floor(this.o.clock.now() / MINUTE);
    if (minute !== this.curMinute || this.cur === null) this.cur = this.minuteCounts(minute);
    const k = keyId * OUTCOME_BITS + id;
    const n = this.cur.get(k);
    if (n !== undefined) return void this.cur.set(k, n + 1);
    if (this.counts.rows >= this.maxRows) return this.drop(1);
    this.counts.rows++;
    this.cur.set(k, 1);
    if (keyId !== 0 && !this.counts.orgOf.has(keyId)) this.counts.orgOf.set(keyId, trace.organizationId ?? 0);
  };

  /** Requests counted and not yet written. */
  get pendingRows(): number {
    return this.counts.rows;
  }

  private outcomeId(outcome: string): number {
    // Codes come from the error table, so the ids stay few; past the bits, one catch-all.
    if (this.outcomes.length >= OUTCOME_BITS - 1) return this.outcomeIds.get(OTHER) ?? this.newId(OTHER);
    return this.newId(outcome);
  }

  private newId(outcome: string): number {
    const id = this.outcomes.length;
    this.outcomes.push(outcome);
    this.outcomeIds.set(outcome, id);
    return id;
  }

  private minuteCounts(minute: number): Map<number, number> {
    this.curMinute = minute;
    let m = this.counts.minutes.get(minute);
    if (!m) this.counts.minutes.set(minute, (m = new Map()));
    return m;
  }

  private drop(requests: number): void {
    this.dropped += requests;
    this.droppedSinceReport += requests;
  }

  /** Write every count in one transaction; a failure keeps them for the next flush. */
  flush(): Promise<void> {
    // One flush at a time: a stop() during a timed flush waits for it, then writes what came after.
    const next = (this.flushing ?? Promise.resolve()).then(() => this.flushOnce());
    const tracked: Promise<void> = next.finally(() => {
      if (this.flushing === tracked) this.flushing = null;
    });
    this.flushing = tracked;
    return next;
  }

  private async flushOnce(): Promise<void> {
    if (this.droppedSinceReport) {
      this.o.onDrop?.(this.droppedSinceReport);
      this.droppedSinceReport = 0;
    }
    if (!this.counts.rows) return;
    const batch = this.counts;
    this.counts = empty();
    this.cur = null;
    this.curMinute = -1;
    try {
      const tables = rowsOf(batch, this.outcomes);
      const orgs = orgRowsOf(batch, this.outcomes);
      await this.write(tables, orgs).catch(async (err: unknown) => {
        if (!isMissingPartition(err)) throw err;
        // A partition the upkeep has not made yet (an instance started before it ran, a clock past
        // the days made ahead): make the batch's and write again.
        await this.o.db.tx(async (q) => {
          for (const [i, t] of USAGE_TABLES.entries())
            for (const b of new Set(tables[i].buckets)) {
              await createPartition(q, t, new Date(b));
              await createPartition(q, ORG_TABLES[i], new Date(b));
            }
        });
        await this.write(tables, orgs);
      });
      this.writes++;
    } catch (err) {
      this.putBack(batch);
      this.o.onError?.(err as Error);
    }
  }

  private write(tables: UsageRows[], orgs: OrgUsageRows[]): Promise<void> {
    return this.o.db.tx(async (q) => {
      for (const [i, t] of USAGE_TABLES.entries()) await addUsage(q, t, tables[i]);
      for (const [i, t] of ORG_TABLES.entries()) await addOrgUsage(q, t, orgs[i]);
    });
  }

  /** A failed batch's counts back with those counted since, up to the cap; beyond it they are dropped and counted. */
  private putBack(batch: Counts): void {
    for (const [minute, counts] of batch.minutes) {
      const into = this.minuteCounts(minute);
      for (const [k, n] of counts) {
        const have = into.get(k);
        if (have !== undefined) into.set(k, have + n);
        else if (this.counts.rows >= this.maxRows) this.drop(n);
        else {
          into.set(k, n);
          this.counts.rows++;
          const keyId = Math.floor(k / OUTCOME_BITS);
          if (keyId !== 0 && !this.counts.orgOf.has(keyId)) this.counts.orgOf.set(keyId, batch.orgOf.get(keyId) ?? 0);
        }
      }
    }
    this.cur = null;
    this.curMinute = -1;
  }

  /** Flush every `intervalMs`, each wait jittered by up to a fifth either way so instances spread their writes. */
  start(intervalMs: number, random: () => number = Math.random): void {
    if (this.timer) return;
    const schedule = () => {
      this.timer = setTimeout(
        () => {
          void this.flush().finally(() => {
            if (this.timer) schedule();
          });
        },
        intervalMs * (0.8 + 0.4 * random()),
      );
      this.timer.unref();
    };
    schedule();
  }

  /** Stop the timer and write what is left (after the gateway's drain, so after the last answer). */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
  }
}

/** The batch as rows of the minute, hour and day tables, each sorted by (key_id, outcome, bucket). */
export function rowsOf(batch: Counts, outcomes: string[]): UsageRows[] {
  // Each outcome id's place in the outcomes' text order, so a row sorts by two numbers.
  const rank = new Array<number>(outcomes.length);
  [...outcomes.keys()].sort((a, b) => (outcomes[a] < outcomes[b] ? -1 : 1)).forEach((id, i) => (rank[id] = i));
  return [MINUTE, HOUR, DAY].map((grain) => {
    // bucket (ms) -> (key id * 128 + outcome id) -> count; the minutes are the batch's own maps.
    const buckets = new Map<number, Map<number, number>>();
    for (const [minute, counts] of batch.minutes) {
      const bucket = Math.floor((minute * MINUTE) / grain) * grain;
      if (grain === MINUTE) {
        buckets.set(bucket, counts);
        continue;
      }
      let into = buckets.get(bucket);
      if (!into) buckets.set(bucket, (into = new Map()));
      for (const [k, n] of counts) into.set(k, (into.get(k) ?? 0) + n);
    }
    const at: number[] = [];
    const ks: number[] = [];
    const ns: number[] = [];
    for (const [bucket, counts] of buckets)
      for (const [k, n] of counts) {
        at.push(bucket);
        ks.push(k);
        ns.push(n);
      }
    const order = ns.map((_n, i) => i);
    const sortKey = ks.map((k) => Math.floor(k / OUTCOME_BITS) * OUTCOME_BITS + rank[k % OUTCOME_BITS]);
    order.sort((a, b) => sortKey[a] - sortKey[b] || at[a] - at[b]);
    const iso = new Map<number, string>();
    const isoOf = (b: number) => iso.get(b) ?? (iso.set(b, new Date(b).toISOString()), iso.get(b)!);
    return {
      buckets: order.map((i) => isoOf(at[i])),
      organizations: order.map((i) => batch.orgOf.get(Math.floor(ks[i] / OUTCOME_BITS)) ?? 0),
      keys: order.map((i) => Math.floor(ks[i] / OUTCOME_BITS)),
      outcomes: order.map((i) => outcomes[ks[i] % OUTCOME_BITS]),
      counts: order.map((i) => ns[i]),
    };
  });
}

/**
 * The batch summed per organization as rows of the organization minute, hour and day tables, each sorted
 * by their primary key (organization_id, bucket, outcome): two instances lock an organization's rows in
 * the same order. Built from the batch's numeric maps as rowsOf is (string keys cost 60 ms a grain for
 * 30,000 rows).
 */
export function orgRowsOf(batch: Counts, outcomes: string[]): OrgUsageRows[] {
  const rank = new Array<number>(outcomes.length);
  [...outcomes.keys()].sort((a, b) => (outcomes[a] < outcomes[b] ? -1 : 1)).forEach((id, i) => (rank[id] = i));
  // Each key's organization once, not per row.
  const orgOfKey = (keyId: number) => batch.orgOf.get(keyId) ?? 0;
  return [MINUTE, HOUR, DAY].map((grain) => {
    // bucket (ms) -> (organization id * 128 + outcome id) -> count.
    const buckets = new Map<number, Map<number, number>>();
    for (const [minute, counts] of batch.minutes) {
      const bucket = Math.floor((minute * MINUTE) / grain) * grain;
      let into = buckets.get(bucket);
      if (!into) buckets.set(bucket, (into = new Map()));
      for (const [k, n] of counts) {
        const o = orgOfKey(Math.floor(k / OUTCOME_BITS)) * OUTCOME_BITS + (k % OUTCOME_BITS);
        into.set(o, (into.get(o) ?? 0) + n);
      }
    }
    const at: number[] = [];
    const os: number[] = [];
    const ns: number[] = [];
    for (const [bucket, counts] of buckets)
      for (const [o, n] of counts) {
        at.push(bucket);
        os.push(o);
        ns.push(n);
      }
    const order = ns.map((_n, i) => i);
    const org = (i: number) => Math.floor(os[i] / OUTCOME_BITS);
    order.sort((a, b) => org(a) - org(b) || at[a] - at[b] || rank[os[a] % OUTCOME_BITS] - rank[os[b] % OUTCOME_BITS]);
    const iso = new Map<number, string>();
    const isoOf = (b: number) => iso.get(b) ?? (iso.set(b, new Date(b).toISOString()), iso.get(b)!);
    return {
      buckets: order.map((i) => isoOf(at[i])),
      organizations: order.map(org),
      outcomes: order.map((i) => outcomes[os[i] % OUTCOME_BITS]),
      counts: order.map((i) => ns[i]),
    };
  });
}

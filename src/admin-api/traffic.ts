// Accepted and refused requests per organization per minute, for the console's chart (the admin API's
// GET /api/organizations/{id}/traffic). Each gateway counts in memory (a map increment per request,
// nothing per request to a store); with Redis it flushes its counts in one pipeline every few seconds
// into one hash per organization and minute, so any admin API reads the whole fleet's counts. Without
// Redis the process's own counts are the answer (a single instance).
import type { Logger } from 'pino';
import type { Clock } from '../ops/clock.js';
import type { RedisConnection } from '../limits/redis/index.js';

export interface TrafficPoint {
  /** The minute's start, Unix seconds. */
  minute: number;
  accepted: number;
  refused: number;
}

const MINUTE = 60_000;
/** Minutes kept: the chart's hour plus the current minute. */
const KEEP = 61;

type Counts = Map<number, [accepted: number, refused: number]>;

export interface OrgTrafficOptions {
  clock: Clock;
  redis?: RedisConnection | null;
  prefix?: string;
  flushMs?: number;
  log?: Logger;
}

export class OrgTraffic {
  /** minute -> organization -> counts not yet in Redis (or, without Redis, all counts of the hour). */
  private minutes = new Map<number, Counts>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;

  constructor(private readonly o: OrgTrafficOptions) {
    if (o.redis) {
      this.timer = setInterval(() => void this.flush(), o.flushMs ?? 5_000);
      this.timer.unref();
    }
  }

  private key(org: number, minute: number): string {
    // The hash tag keeps one organization's minutes in one Cluster slot: the chart's read is one pipeline.
    return `${this.o.prefix ?? 'kg:'}tr:{${org}}:${minute}`;
  }

  /** One answered request of an organization: accepted (forwarded) or refused by the gateway. */
  record(org: number, refused: boolean): void {
    const minute = Math.floor(this.o.clock.now() / MINUTE);
    let counts = this.minutes.get(minute);
    if (!counts) {
      counts = new Map();
      this.minutes.set(minute, counts);
      this.prune(minute);
    }
    const c = counts.get(org);
    if (c) c[refused ? 1 : 0]++;
    else counts.set(org, refused ? [0, 1] : [1, 0]);
  }

  private prune(current: number): void {
    for (const m of this.minutes.keys()) if (m <= current - KEEP) this.minutes.delete(m);
  }

  /** Push the pending counts to Redis; on failure they stay pending (bounded to the hour) for the next flush. */
  flush(): Promise<void> {
    const redis = this.o.redis;
    if (!redis || this.flushing) return this.flushing ?? Promise.resolve();
    const taken = this.minutes;
    this.minutes = new Map();
    if (!taken.size) return Promise.resolve();
    const byOrg = new Map<number, [number, number, number][]>();
    for (const [minute, counts] of taken)
      for (const [org, [a, r]] of counts) {
        const rows = byOrg.get(org) ?? [];
        rows.push([minute, a, r]);
        byOrg.set(org, rows);
      }
    const pipeline = redis.pipeline();
    for (const [org, rows] of byOrg)
      for (const [minute, a, r] of rows) {
        const key = this.key(org, minute);
        if (a) pipeline.hincrby(key, 'a', a);
        if (r) pipeline.hincrby(key, 'r', r);
        pipeline.pexpire(key, (KEEP + 5) * MINUTE);
      }
    this.flushing = pipeline
      .exec()
      .then((results) => {
        if (results?.some(([err]) => err)) throw results.find(([err]) => err)![0];
      })
      .catch((err: Error) => {
        // Not written: merged back, so a Redis outage delays the chart's counts instead of losing them.
        for (const [minute, counts] of taken)
          for (const [org, [a, r]] of counts) {
            let mine = this.minutes.get(minute);
            if (!mine) this.minutes.set(minute, (mine = new Map()));
            const c = mine.get(org) ?? [0, 0];
            mine.set(org, [c[0] + a, c[1] + r]);
          }
        this.prune(Math.floor(this.o.clock.now() / MINUTE));
        this.o.log?.debug({ err: err.message }, 'traffic counters not flushed; kept for the next flush');
      })
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }

  /** The organization's last `minutes` minutes, oldest first, the current minute last. */
  async series(org: number, minutes = 60): Promise<TrafficPoint[]> {
    const now = Math.floor(this.o.clock.now() / MINUTE);
    const range = Array.from({ length: minutes }, (_, i) => now - minutes + 1 + i);
    const points = range.map((m) => {
      const c = this.minutes.get(m)?.get(org);
      return { minute: m * 60, accepted: c?.[0] ?? 0, refused: c?.[1] ?? 0 };
    });
    if (this.o.redis) {
      const pipeline = this.o.redis.pipeline();
      for (const m of range) pipeline.hmget(this.key(org, m), 'a', 'r');
      const results = (await pipeline.exec()) ?? [];
      results.forEach(([err, v], i) => {
        if (err || !Array.isArray(v)) return;
        points[i].accepted += Number(v[0] ?? 0);
        points[i].refused += Number(v[1] ?? 0);
      });
    }
    return points;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

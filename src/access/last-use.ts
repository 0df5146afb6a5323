// When each secret was last used (issue 22 item 3), without a database write per request: the
// gateway notes a secret at most once per wall-clock minute (one Map lookup on the hot path) and
// writes what it noted in one statement per flush, every minute, so the database sees at most one
// write per secret per minute from each instance. Stopping flushes, so a SIGTERM loses nothing.
import type { Queryable } from '../db/types.js';
import type { Clock } from '../ops/clock.js';
import type { Principal } from './principal.js';

export const LAST_USE_FLUSH_MS = 60_000;
/** Held across failed flushes (database down) at most this many secrets; the newest minute wins. */
const MAX_PENDING = 100_000;

interface Pending {
  keyId: number;
  at: number;
}

export class LastUseRecorder {
  /** secret hash -> the minute (epoch minutes) it was last noted in. */
  private noted = new Map<string, number>();
  private pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  writes = 0;

  constructor(
    private db: Queryable,
    private clock: Clock,
    private onError: (err: Error) => void = () => {},
  ) {}

  /** The hot path: note a use of the principal's secret at `now`. */
  record(p: Principal, now: number): void {
    const minute = Math.floor(now / 60_000);
    if (this.noted.get(p.secretHash) === minute) return;
    this.noted.set(p.secretHash, minute);
    if (this.pending.size < MAX_PENDING || this.pending.has(p.secretHash))
      this.pending.set(p.secretHash, { keyId: p.keyId, at: now });
  }

  /** Write every noted use in one statement; a failure keeps them for the next flush. */
  flush(): Promise<void> {
    // One flush at a time: a stop() during a timed flush waits for it, then writes what came after.
    const run = async (): Promise<void> => {
      if (!this.pending.size) return;
      const batch = this.pending;
      this.pending = new Map();
      const hashes: string[] = [];
      const ids: number[] = [];
      const ats: Date[] = [];
      for (const [h, p] of batch) {
        hashes.push(h);
        ids.push(p.keyId);
        ats.push(new Date(p.at));
      }
      try {
        await this.db.query(
          `INSERT INTO api_key_last_use (key_hash, key_id, last_used_at)
           SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[])
           ON CONFLICT (key_hash) DO UPDATE SET last_used_at = greatest(api_key_last_use.last_used_at, excluded.last_used_at)`,
          [hashes, ids, ats],
        );
        this.writes++;
      } catch (err) {
        for (const [h, p] of batch) {
          const later = this.pending.get(h);
          if (!later || later.at < p.at) this.pending.set(h, p);
        }
        this.onError(err as Error);
      }
      // Forget minutes that have passed: the map holds only the secrets used this minute.
      const minute = Math.floor(this.clock.now() / 60_000);
      for (const [h, m] of this.noted) if (m < minute) this.noted.delete(h);
    };
    const next = (this.flushing ?? Promise.resolve()).then(run);
    const tracked: Promise<void> = next.finally(() => {
      if (this.flushing === tracked) this.flushing = null;
    });
    this.flushing = tracked;
    return next;
  }

  start(intervalMs = LAST_USE_FLUSH_MS): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Stop the timer and write what is left (the drain calls this after the last request). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}

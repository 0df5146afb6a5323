// The periodic scan of keys' expiries (docs/events.md, key.expiring and key.expired): one instance of the
// fleet at a time (an advisory lock held for the scan's transaction; the others skip that round), each
// event once per key and expiry instant (its mark), and the old events' upkeep.
import type { Db, Queryable, Row } from '../../db/types.js';
import type { Clock } from '../../ops/clock.js';
import { emitEvent, keyData } from './outbox.js';
import { deleteOldEvents, keysExpired, keysExpiring, tryScanLock } from './queries.js';

const DAY_MS = 86_400_000;
/**
 * How far back an expiry is still told as key.expired: a fleet down for longer, or the first start of a
 * keygate with events, does not tell of keys that expired long ago.
 */
export const EXPIRED_LOOKBACK_MS = 7 * DAY_MS;
const BATCH = 200;

export interface ScanOptions {
  /** key.expiring is told this many days before expiresAt (EVENTS_KEY_EXPIRING_DAYS). */
  expiringDays: number;
  /** Events older than this, their deliveries done, are deleted (EVENTS_RETENTION_DAYS). */
  retentionDays: number;
}

export interface ScanResult {
  expiring: number;
  expired: number;
  deleted: number;
}

/** One scan; null when another instance holds the scan now. */
export async function scanExpiries(db: Db, clock: Clock, o: ScanOptions): Promise<ScanResult | null> {
  return db.tx(async (q) => {
    if (!(await tryScanLock(q))) return null;
    const now = new Date(clock.now());
    const expiring = await tellEach(q, now, 'key.expiring', (n) =>
      keysExpiring(q, n, new Date(n.getTime() + o.expiringDays * DAY_MS), BATCH),
    );
    const expired = await tellEach(q, now, 'key.expired', (n) =>
      keysExpired(q, new Date(n.getTime() - EXPIRED_LOOKBACK_MS), n, BATCH),
    );
    const deleted = await deleteOldEvents(q, new Date(now.getTime() - o.retentionDays * DAY_MS));
    return { expiring, expired, deleted };
  });
}

/** Tells of each key `find` returns, a batch at a time, until a batch is short. */
async function tellEach(
  q: Queryable,
  now: Date,
  type: 'key.expiring' | 'key.expired',
  find: (now: Date) => Promise<Row[]>,
): Promise<number> {
  let told = 0;
  for (;;) {
    const found = await find(now);
    // The service layer's view of a key, loaded only when a key is due: a gateway process that has
    // nothing to tell keeps the service layer out of its memory (test/ops/gateway-modules.test.ts).
    const { keyView, keyRow } = found.length ? await keyViews() : ({} as Awaited<ReturnType<typeof keyViews>>);
    for (const { id, mark } of found) {
      const row = await keyRow(q, id);
      if (!row) continue;
      const key = keyData(keyView(row, now));
      const data = type === 'key.expiring' ? { key, expiresAt: key.expiresAt } : { key, expiredAt: key.expiresAt };
      if (await emitEvent(q, { type, organizationId: key.organizationId, at: now, data, mark })) told++;
    }
    if (found.length < BATCH) return told;
  }
}

/** The scan every `everyMs`; errors are logged and the next round tries again. */
export function startScans(
  db: Db,
  clock: Clock,
  o: ScanOptions & { everyMs: number; log: { warn(o: object, msg: string): void } },
): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  const round = () => {
    if (running) return;
    running = scanExpiries(db, clock, o)
      .catch((err) => o.log.warn({ err: (err as Error).message }, 'event scan failed; the next round tries again'))
      .finally(() => (running = null));
  };
  const timer = setInterval(round, o.everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

async function keyViews() {
  const [{ keyView }, { keyRow }] = await Promise.all([import('../service/keys.js'), import('../service/queries.js')]);
  return { keyView, keyRow };
}

// quota.threshold (docs/events.md): an organization's monthly quota crossing each threshold of
// EVENTS_QUOTA_THRESHOLDS, told once per organization, month and threshold across the fleet. The gateway
// calls `hear` after every request that spent the quota, so it does nothing most of the time: each
// process remembers the highest threshold it knows crossed per organization this month, and only a
// crossing it has not seen writes, an event whose mark (organization, month, threshold) the database
// keeps unique, so whichever instance writes first tells it and the others write nothing.
import type { Db } from '../../db/types.js';
import type { LayerState } from '../../limits/types.js';
import { emitEvent } from './outbox.js';
import { organizationName } from './queries.js';

export interface ThresholdOptions {
  db: Db;
  /** Percentages of the quota, ascending. */
  thresholds: number[];
  log: { warn(o: object, msg: string): void };
}

/** The calendar month (UTC) of an instant, as the month counter counts it: `2026-11`. */
export const monthOf = (now: number) => new Date(now).toISOString().slice(0, 7);

export const thresholdMark = (organizationId: number, month: string, threshold: number) =>
  `quota.threshold:${organizationId}:${month}:${threshold}`;

export class QuotaThresholds {
  readonly #o: ThresholdOptions;
  readonly #known = new Map<number, { month: string; level: number }>();
  readonly #writing = new Set<Promise<void>>();

  constructor(o: ThresholdOptions) {
    this.#o = { ...o, thresholds: [...o.thresholds].sort((a, b) => a - b) };
  }

  /** GatewayDeps.monthSpent. */
  hear = (organizationId: number, month: LayerState, now: number): void => {
    const t = this.#o.thresholds;
    if (month.limit <= 0) return;
    let level = 0;
    while (level < t.length && month.used * 100 >= t[level] * month.limit) level++;
    if (level === 0) return;
    const key = monthOf(now);
    const known = this.#known.get(organizationId);
    const from = known && known.month === key ? known.level : 0;
    if (level <= from) return;
    this.#known.set(organizationId, { month: key, level });
    const p = this.#tell(organizationId, key, t.slice(from, level), month, now)
      .catch((err) => {
        // Forgotten, so that the next request of the organization tries again.
        const k = this.#known.get(organizationId);
        if (k && k.month === key && k.level === level) this.#known.set(organizationId, { month: key, level: from });
        this.#o.log.warn({ organizationId, err: (err as Error).message }, 'quota threshold event not written');
      })
      .finally(() => this.#writing.delete(p));
    this.#writing.add(p);
  };

  async #tell(organizationId: number, month: string, crossed: number[], state: LayerState, now: number) {
    await this.#o.db.tx(async (q) => {
      const name = await organizationName(q, organizationId);
      for (const threshold of crossed) {
        await emitEvent(q, {
          type: 'quota.threshold',
          organizationId,
          at: new Date(now),
          mark: thresholdMark(organizationId, month, threshold),
          data: {
            organization: { id: organizationId, name },
            month,
            threshold,
            used: state.used,
            quota: state.limit,
          },
        });
      }
    });
  }

  /** The writes under way finished. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#writing]);
  }
}

// Events and their webhooks in a process of the fleet: the outbox's delivery, the scans that find keys
// expiring or expired, and the monthly quota's thresholds heard from the gateway (src/access/events/).
import type { GatewayDeps } from '../gateway/context.js';
import { DeliveryLoop } from '../access/events/delivery.js';
import { startScans } from '../access/events/scan.js';
import { QuotaThresholds } from '../access/events/thresholds.js';
import { systemClock } from '../ops/clock.js';
import type { AppParts, Closer } from './types.js';

export interface StartedEvents {
  /** GatewayDeps.monthSpent: undefined when events are off. */
  monthSpent: GatewayDeps['monthSpent'];
  /** Run last: the delivery loop and scans stopped, their in-flight work finished or left to the outbox. */
  close: Closer;
}

export async function startEvents(o: AppParts): Promise<StartedEvents> {
  const s = o.app.settings;
  const log = o.app.log.child({ c: 'events' });
  const stops: Closer[] = [];
  if (s.WEBHOOKS_DELIVERY === 'on') {
    const loop = new DeliveryLoop({
      db: o.db,
      clock: o.clock,
      wallClock: systemClock,
      timeoutMs: s.WEBHOOKS_TIMEOUT_MS,
      concurrency: s.WEBHOOKS_CONCURRENCY,
      pollMs: s.WEBHOOKS_POLL_MS,
      log,
    });
    await loop.start();
    stops.push(() => loop.stop());
  }
  const scans = startScans(o.db, o.clock, {
    everyMs: s.EVENTS_SCAN_MS,
    expiringDays: s.EVENTS_KEY_EXPIRING_DAYS,
    retentionDays: s.EVENTS_RETENTION_DAYS,
    log,
  });
  stops.push(() => scans.stop());
  const thresholds = new QuotaThresholds({ db: o.db, thresholds: s.EVENTS_QUOTA_THRESHOLDS, log });
  stops.push(() => thresholds.close());
  return {
    monthSpent: s.EVENTS_QUOTA_THRESHOLDS.length ? thresholds.hear : undefined,
    close: async () => {
      for (const stop of stops) await stop();
    },
  };
}

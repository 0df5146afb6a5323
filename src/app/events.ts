// Events and their webhooks in a process of the fleet: the outbox's delivery, the scans that find keys
// expiring or expired, and the monthly quota's thresholds heard from the gateway (src/access/events/).
import type { GatewayDeps } from '../gateway/context.js';
import type { AppParts, Closer } from './types.js';

export interface StartedEvents {
  /** GatewayDeps.monthSpent: undefined when events are off. */
  monthSpent: GatewayDeps['monthSpent'];
  /** Run last: the delivery loop and scans stopped, their in-flight work finished or left to the outbox. */
  close: Closer;
}

export async function startEvents(o: AppParts): Promise<StartedEvents> {
  void o;
  return { monthSpent: undefined, close: async () => {} };
}

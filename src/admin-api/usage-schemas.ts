// What the admin API's usage history, billing export, overview and search answer (./usage-routes.ts,
// ./overview-routes.ts), as zod schemas the OpenAPI document is generated from (docs/usage.md, Reading).
import { z } from 'zod';
import { pgId } from '../db/storable.js';
import { EXPORT_COLUMNS } from '../access/service/usage-history.js';

const id = pgId;
const time = z.string().describe('ISO 8601 time (UTC)');
const count = z.number().int().min(0);
const outcomes = z
  .record(z.string(), count)
  .describe(
    'Requests per outcome: forwarded_2xx, forwarded_3xx, forwarded_4xx, forwarded_5xx, answered (admitted); limited_key, limited_address, limited_month, refused_<code> (refused).',
  );

const counts = {
  admitted: count.describe('Requests forwarded or answered by the gateway.'),
  refused: count.describe('Requests refused by a limit or with an error code.'),
  outcomes,
};

export const HistorySchema = z.object({
  keyId: id.optional().describe('The key, for a key’s history.'),
  organizationId: id,
  granularity: z.enum(['minute', 'hour', 'day']),
  from: time.describe('The first bucket’s start: `from` rounded down to the granularity.'),
  to: time.describe('The last bucket’s end: `to` rounded up to the granularity.'),
  outcomes: z.array(z.string()).describe('The outcomes every bucket lists, in order.'),
  totals: z.object(counts).describe('The sums over every bucket.'),
  buckets: z
    .array(z.object({ start: time.describe('The bucket’s start; it lasts one granularity.'), ...counts }))
    .describe('Every bucket of the range in order, zero-filled.'),
});

export const ExportLineSchema = z
  .object(
    Object.fromEntries(
      EXPORT_COLUMNS.map((c) => [
        c,
        c === 'month' || c.endsWith('_name') || c === 'key_hint' ? z.string() : z.number().int().min(0),
      ]),
    ),
  )
  .describe('One key’s month: a CSV row (after the header row) or a JSON line, columns in this order.');

export const OverviewSchema = z.object({
  organizations: count,
  keys: z.object({ total: count, active: count, expired: count, revoked: count }),
  today: z
    .object({ date: z.string().describe('The UTC day, YYYY-MM-DD.'), ...counts })
    .describe('Every request answered today (UTC) from the usage history, keys or none.'),
  quotas: z
    .array(
      z.object({
        organizationId: id,
        name: z.string(),
        used: count,
        limit: count,
        percent: count.describe('used / limit, rounded down.'),
        reset: z.number().int().describe('Unix seconds when the month ends and the quota renews.'),
      }),
    )
    .describe('Organizations whose monthly quota is 80 % or more spent, the most spent first.'),
  expiringKeys: z
    .array(
      z.object({
        id,
        organizationId: id,
        organizationName: z.string(),
        name: z.string(),
        hint: z.string(),
        type: z.string(),
        expiresAt: time,
      }),
    )
    .describe('Keys not revoked that expire within 7 days, the soonest first (at most 100).'),
});

export const SearchSchema = z.object({
  organizations: z
    .array(z.object({ id, name: z.string(), plan: z.string().nullable(), paused: z.boolean(), apiAccess: z.boolean() }))
    .describe('At most 20: the id first, then by name.'),
  keys: z
    .array(
      z.object({
        id,
        organizationId: id,
        organizationName: z.string(),
        name: z.string(),
        hint: z.string(),
        type: z.string(),
        status: z.enum(['active', 'expired', 'revoked']),
      }),
    )
    .describe('At most 20: the id first, then by name.'),
});

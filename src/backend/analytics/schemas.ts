// Query schemas of the analytics domain: the window is fixed (see queries.ts), so a query parameter
// trying to change it is refused as unknown.
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';

export const noQuery = z.object({}).strict();
export const leaderboardQuery = z
  .object({
    limit: z
      .string()
      .regex(/^[0-9]{1,3}$/, 'must be an integer from 1 to 100')
      .transform(Number)
      .pipe(z.number().int().min(1).max(100))
      .optional(),
  })
  .strict();

/** The spec's account deliverability record (a rolling 30-day window; zeros without sends). */
export const deliverabilityRecord = z.looseObject({
  accountId: z.number().int(),
  emailAddress: z.string(),
  deliverabilityRate: z.number(),
  bounceRate: z.number(),
  spamRate: z.number(),
  sent: z.number().int(),
});

const WS = '/v2/workspaces/{workspaceId}';

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  [`GET ${WS}/analytics/overview`]: { query: noQuery },
  [`GET ${WS}/analytics/trends`]: { query: noQuery },
  [`GET ${WS}/analytics/leaderboard`]: { query: leaderboardQuery },
  [`GET ${WS}/analytics/deliverability`]: { query: noQuery, response: z.array(deliverabilityRecord) },
  [`GET ${WS}/accounts/{accountId}/deliverability`]: { query: noQuery, response: deliverabilityRecord },
  [`GET ${WS}/accounts/{accountId}/stats`]: { query: noQuery },
};

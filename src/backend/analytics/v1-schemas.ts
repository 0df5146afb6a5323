// The schemas of the /v1 report, dashboard and health routes (v1-routes.ts): requests strict (an unknown
// field is 400 invalid_request naming it), and the response bodies whose shape the spec shows (fields
// beyond those shown may follow).
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';
import { idList, notFoundItem } from '../mailbox/index.js';
import { isDate } from '../time.js';

export const date = z.string().refine(isDate, 'must be a date YYYY-MM-DD');

export const rangeQuery = z.object({ from: date, to: date }).strict();
export const bulkReportBody = z.object({ emailAccountIds: idList(50), from: date, to: date }).strict();

export const dashboard = z.looseObject({
  totalAccounts: z.number().int(),
  activeWarmups: z.number().int(),
  pausedWarmups: z.number().int(),
  accountsWithErrors: z.number().int(),
  avgSetupScore: z.number(),
});

const reportDay = z.looseObject({
  date: z.string(),
  sent: z.number().int(),
  inbox: z.number().int(),
  received: z.number().int(),
  spam: z.number().int(),
  other: z.number().int(),
  undelivered: z.number().int(),
  replied: z.number().int(),
  deliverabilityRate: z.number(),
});
export const report = z.looseObject({
  emailAccountId: z.number().int(),
  from: z.string(),
  to: z.string(),
  days: z.array(reportDay),
});

/** The routes of this domain on /v1 and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  'GET /v1/health': { response: z.looseObject({ status: z.literal('ok') }) },
  'GET /v1/reports/export': { query: rangeQuery, envelope: 'csv' },
  'POST /v1/reports/bulk': {
    body: bulkReportBody,
    response: z.looseObject({ reports: z.array(z.union([report, notFoundItem])) }),
  },
  'GET /v1/reports/{emailAccountId}': { query: rangeQuery, response: report },
  'GET /v1/dashboard': { response: dashboard },
};

// The usage history's operations (docs/usage.md, Reading and Export): a key's and an organization's
// counts per minute, hour or day, and a month of every key for billing as CSV or JSON lines, streamed.
// The rules and the SQL are the service layer's (src/access/service/usage-history.ts).
import {
  EXPORT_COLUMNS,
  EXPORT_FORMATS,
  exportText,
  GRANULARITIES,
  keyUsageHistory,
  monthUsageRows,
  organizationUsageHistory,
  type HistoryQuery,
} from '../access/service/usage-history.js';
import { AdminApiError } from './errors.js';
import {
  ID_QUERY,
  idQuery,
  oneOfQuery,
  service,
  StreamedAnswer,
  type AdminRoute,
  type QueryParam,
} from './route-kit.js';
import { ExportLineSchema, HistorySchema } from './usage-schemas.js';
import { z } from 'zod';

// An instant with its zone, as the other routes take times (an expiry): the zone is never guessed.
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function instantQuery(q: URLSearchParams, name: string): Date | undefined {
  const raw = q.get(name);
  if (raw === null || raw === '') return undefined;
  const t = INSTANT.test(raw) ? new Date(raw) : null;
  if (!t || Number.isNaN(t.getTime()))
    throw new AdminApiError(
      'invalid_request',
      `${name} must be an ISO 8601 instant with a zone, e.g. 2026-11-22T00:00:00Z`,
    );
  return t;
}

function historyQuery(q: URLSearchParams): HistoryQuery {
  return {
    from: instantQuery(q, 'from'),
    to: instantQuery(q, 'to'),
    granularity: oneOfQuery(q, 'granularity', GRANULARITIES),
  };
}

const HISTORY_QUERY: QueryParam[] = [
  {
    name: 'from',
    description:
      'The first instant (ISO 8601 with a zone), rounded down to the granularity; default 24 hours before `to`.',
    schema: { type: 'string', format: 'date-time' },
  },
  {
    name: 'to',
    description: 'The end (ISO 8601 with a zone), rounded up to the granularity; default now (its bucket included).',
    schema: { type: 'string', format: 'date-time' },
  },
  {
    name: 'granularity',
    description: 'minute (at most 1,440 buckets), hour (the default, at most 2,000) or day (at most 400).',
    schema: { type: 'string', enum: [...GRANULARITIES] },
  },
];

export const USAGE_ROUTES: AdminRoute[] = [
  {
    method: 'GET',
    path: '/api/keys/{id}/usage/history',
    role: 'read',
    summary:
      "The key's usage history: requests per bucket by outcome, with admitted and refused totals, every bucket of the range present (default the last 24 hours by hour).",
    query: HISTORY_QUERY,
    status: 200,
    response: HistorySchema,
    handle: async ({ ctx, params, query }) => service(keyUsageHistory(ctx, params.id, historyQuery(query))),
  },
  {
    method: 'GET',
    path: '/api/organizations/{id}/usage/history',
    role: 'read',
    summary:
      "The organization's usage history, every key of it summed: requests per bucket by outcome, with admitted and refused totals (default the last 24 hours by hour).",
    query: HISTORY_QUERY,
    status: 200,
    response: HistorySchema,
    handle: async ({ ctx, params, query }) => service(organizationUsageHistory(ctx, params.id, historyQuery(query))),
  },
  {
    method: 'GET',
    path: '/api/usage/export',
    role: 'read',
    summary:
      "A month's usage per key for billing: every organization's, or one's, as CSV (a header row, then a row per key with any request that month) or JSON lines, streamed; the columns are fixed (docs/usage.md, Export).",
    query: [
      {
        name: 'month',
        description: 'The UTC month, YYYY-MM (required).',
        schema: { type: 'string', pattern: '^[2-9][0-9]{3}-(0[1-9]|1[0-2])$' },
      },
      { name: 'organization', description: "Only this organization's keys.", schema: ID_QUERY },
      {
        name: 'format',
        description: 'csv (the default) or jsonl.',
        schema: { type: 'string', enum: [...EXPORT_FORMATS] },
      },
    ],
    status: 200,
    response: ExportLineSchema,
    produces: {
      'text/csv': z.string().describe(`RFC 4180, CRLF line ends; the header row: ${EXPORT_COLUMNS.join(',')}.`),
      'application/x-ndjson': ExportLineSchema,
    },
    handle: async ({ ctx, query }) => {
      const month = query.get('month');
      if (!month) throw new AdminApiError('invalid_request', 'month is required: YYYY-MM, e.g. 2026-11');
      const organizationId = idQuery(query, 'organization');
      const format = oneOfQuery(query, 'format', EXPORT_FORMATS) ?? 'csv';
      const rows = await service(monthUsageRows(ctx, { month, organizationId }));
      const file = `keygate-usage-${month}${organizationId ? `-organization-${organizationId}` : ''}.${format}`;
      return new StreamedAnswer(
        {
          'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
          'content-disposition': `attachment; filename="${file}"`,
        },
        exportText(rows, format),
      );
    },
  },
];

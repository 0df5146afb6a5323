// The schemas of the /v1 email-account routes (v1-routes.ts) and the setup, DNS and deliverability scores
// (v1-deliverability.ts): requests strict (an unknown field is 400 invalid_request naming it), and the
// response bodies whose shape the spec shows (fields beyond those shown may follow).
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';
import { connection } from './schemas.js';
import { emptyBody, idList, notFoundItem } from '../mailbox/index.js';
import { isDate, isTimeZone } from '../time.js';
import { DB_ID, isDbId } from '../../config/contract.js';

/** Page size bounds of the account list (the spec does not show them). */
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;
export const STATUS_FILTER = ['active', 'warming', 'paused', 'error', 'auth-expired'] as const;

const intParam = (min: number, max: number, dflt: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .default(dflt as never);

export const listQuery = z
  .object({
    search: z.string().max(320).optional(),
    sort: z.enum(['createdAt', 'fromEmail', 'fromName']).default('createdAt'),
    sortBy: z.preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), z.enum(['ASC', 'DESC'])).default('DESC'),
    status: z.enum(STATUS_FILTER).optional(),
    tags: z.array(z.string().trim().min(1).max(64)).max(50).optional(),
    page: intParam(1, 1_000_000, 1),
    limit: intParam(1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT),
  })
  .strict();

/** The connect body (the spec does not show it): one SMTP/IMAP mailbox, the /v2 connection shape. */
export const connectBody = z
  .object({
    fromEmail: z.string().email().max(320),
    fromName: z.string().trim().max(200).default(''),
    smtp: connection,
    imap: connection,
    timeZone: z.string().refine(isTimeZone, 'must be an IANA time zone name').optional(),
    /** A provider workspace of the organization (registered through /v1/workspaces), or null. */
    workspaceId: z
      .string()
      .regex(DB_ID, 'must be a provider workspace id')
      .refine(isDbId, 'must be a provider workspace id')
      .nullable()
      .default(null),
  })
  .strict();

export const tagsBody = z
  .object({
    emailAccountIds: idList(50),
    tags: z.array(z.string().trim().min(1).max(64)).min(1).max(50),
  })
  .strict();

export const bulkStatusBody = z.object({ emailAccountIds: idList(50) }).strict();
export const bulkDeleteBody = z.object({ emailAccountIds: idList(20) }).strict();

/** Actions without fields (disconnect, warmup start and stop, setup-score refresh): `{}` is tolerated. */

export const deliverabilityBody = z
  .object({
    startDate: z.string().refine(isDate, 'must be a date YYYY-MM-DD'),
    endDate: z.string().refine(isDate, 'must be a date YYYY-MM-DD'),
    esps: z
      .array(z.enum(['gmail', 'outlook', 'other']))
      .min(1)
      .refine((a) => new Set(a).size === a.length, 'each ESP at most once')
      .default(['gmail', 'outlook', 'other']),
  })
  .strict();

export const accountItem = z.looseObject({
  id: z.number().int(),
  fromEmail: z.string(),
  fromName: z.string(),
  type: z.string(),
  status: z.string(),
  createdAt: z.string(),
  warmupScore: z.number(),
  outreachReadinessStatus: z.string(),
  workspaceId: z.string().nullable(),
  tags: z.array(z.string()),
});

export const accountStatus = z.looseObject({
  emailAccountId: z.number().int(),
  fromEmail: z.string(),
  type: z.string(),
  authStatus: z.string(),
  warmupStatus: z.string(),
  warmupScore: z.number(),
  outreachReadinessStatus: z.string(),
});

/** A bulk answer's item for an id that is not an account of the organization. */

/** A check that has not run is omitted, not false (spec). */
const listing = z.looseObject({ listed: z.number().int(), notListed: z.number().int() });
export const setupScore = z.looseObject({
  emailAccountId: z.number().int(),
  emailAccountScore: z.number(),
  spf: z.boolean().optional(),
  dkim: z.boolean().optional(),
  dmarc: z.boolean().optional(),
  mx: z.boolean().optional(),
  ipBlacklist: listing.optional(),
  domainBlacklist: listing.optional(),
  updatedAt: z.string(),
  manualLastRefreshedAt: z.string().optional(),
});

export const dnsHealth = z.looseObject({
  emailAccountId: z.number().int(),
  spf: z.string(),
  dkim: z.string(),
  dmarc: z.string(),
  mx: z.string(),
  cachedAt: z.string(),
});

const espScore = z.looseObject({
  deliverabilityRate: z.number(),
  sentCount: z.number().int(),
  inboxCount: z.number().int(),
  spamCount: z.number().int(),
});
export const deliverabilityScore = z.looseObject({
  emailAccountId: z.number().int(),
  totalDeliverabilityRate: z.number(),
  totalSentCount: z.number().int(),
  totalInboxCount: z.number().int(),
  totalSpamInboxCount: z.number().int(),
  gmail: espScore.optional(),
  outlook: espScore.optional(),
  other: espScore.optional(),
});

const ACC = '/v1/email-accounts';

/** The routes of this domain on /v1 and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  [`GET ${ACC}`]: {
    query: listQuery,
    response: z.looseObject({
      items: z.array(accountItem),
      total: z.number().int(),
      page: z.number().int(),
      limit: z.number().int(),
      totalPages: z.number().int(),
    }),
  },
  [`POST ${ACC}`]: { body: connectBody, response: accountItem, status: [201] },
  // Always 501 not_implemented (spec): connect with POST /v1/email-accounts instead.
  [`POST ${ACC}/oauth`]: { status: [] },
  [`POST ${ACC}/bulk-status`]: {
    body: bulkStatusBody,
    response: z.looseObject({ results: z.array(z.union([accountStatus, notFoundItem])) }),
  },
  [`POST ${ACC}/bulk-delete`]: {
    body: bulkDeleteBody,
    response: z.looseObject({
      results: z.array(
        z.looseObject({ emailAccountId: z.number().int(), deleted: z.boolean(), errorCode: z.string().optional() }),
      ),
    }),
  },
  [`POST ${ACC}/tags/assign`]: { body: tagsBody, response: z.array(accountItem) },
  [`POST ${ACC}/tags/unassign`]: { body: tagsBody, response: z.array(accountItem) },
  [`GET ${ACC}/{emailAccountId}/status`]: { response: accountStatus },
  [`POST ${ACC}/{emailAccountId}/disconnect`]: { body: emptyBody.optional(), response: accountStatus },
  [`DELETE ${ACC}/{emailAccountId}`]: {
    response: z.looseObject({ emailAccountId: z.number().int(), deleted: z.literal(true) }),
  },
  'GET /v1/setup-score/{emailAccountId}': { response: setupScore },
  'POST /v1/setup-score/{emailAccountId}/refresh': { body: emptyBody.optional(), response: setupScore },
  'GET /v1/dns-health/{emailAccountId}': { response: dnsHealth },
  'POST /v1/deliverability-score/{emailAccountId}': { body: deliverabilityBody, response: deliverabilityScore },
};

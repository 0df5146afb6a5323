// Request schemas of the /v1 partner interface, strict (an unknown field is 400 invalid_request naming
// it), and the response bodies whose shape the spec shows.
import { z } from 'zod';
import type { SchemaRegistry } from '../schemas.js';
import { connection } from '../accounts/schemas.js';
import { PG_INT_MAX } from '../validation.js';
import { idList } from '../accounts/v1-views.js';
import { DAYS, isDate, isTimeZone } from '../time.js';

// ---- email accounts ----

/** Page size bounds of the account list (the spec does not show them). */
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;
export const STATUS_FILTER = ['active', 'warming', 'paused', 'error', 'auth-expired'] as const;

const intParam = (min: number, max: number, dflt: number) =>
  z.string().regex(/^\d{1,9}$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max)).default(dflt as never);

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
      .regex(/^[1-9][0-9]{0,9}$/, 'must be a provider workspace id')
      .refine((s) => Number(s) <= PG_INT_MAX, 'must be a provider workspace id')
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
export const emptyBody = z.object({}).strict();

// ---- warmup ----

export const STRATEGIES = ['progressive', 'flat', 'randomize', 'smart'] as const;
export const LANGUAGES = ['English', 'Spanish', 'French', 'German', 'Portuguese', 'Chinese', 'Japanese', 'Arabic', 'Hindi', 'Russian', 'Italian', 'Dutch'] as const;

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** One day's sending window, local wall-clock: `{day: 'monday', fromHour, fromMinute, toHour, toMinute}`. */
const timeSlot = z
  .object({ day: z.enum(DAYS), fromHour: int(0, 23), fromMinute: int(0, 59), toHour: int(0, 23), toMinute: int(0, 59) })
  .strict()
  .refine((s) => s.fromHour * 60 + s.fromMinute < s.toHour * 60 + s.toMinute, { message: 'fromHour:fromMinute must be earlier than toHour:toMinute' });

export const patchBody = z
  .object({
    strategy: z.enum(STRATEGIES).optional(),
    maxSendingLimit: int(0, 100).optional(),
    warmUpInitialSendingLimit: int(0, 100).optional(),
    increaseEmailsByNumber: int(0, 30).optional(),
    replyRate: z.number().min(0).max(65).optional(),
    timeZone: z.string().refine(isTimeZone, { message: 'must be an IANA time zone name' }).optional(),
    timeSlots: z
      .array(timeSlot)
      .min(1)
      .max(7)
      .refine((a) => new Set(a.map((s) => s.day)).size === a.length, { message: 'each day at most once' })
      .optional(),
    warmupLanguage: z.enum(LANGUAGES).optional(),
    upcomingContentConfig: z
      .object({ industry: z.string().trim().min(1).max(100), topics: z.array(z.string().trim().min(1).max(100)).max(20) })
      .strict()
      .optional(),
    googleVolume: int(1, 98).optional(),
    microsoftVolume: int(1, 98).optional(),
    othersVolume: int(1, 98).optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (Object.keys(body).length === 0) ctx.addIssue({ code: 'custom', path: [], message: 'at least one setting is required' });
    // Enforced only when strategy is sent in the same request (spec, PATCH table).
    if ((body.strategy === 'flat' || body.strategy === 'randomize') && body.increaseEmailsByNumber !== undefined && body.increaseEmailsByNumber !== 0) {
      ctx.addIssue({ code: 'custom', path: ['increaseEmailsByNumber'], message: `must be 0 when strategy is ${body.strategy}` });
    }
    const vols = [body.googleVolume, body.microsoftVolume, body.othersVolume];
    const sent = vols.filter((v) => v !== undefined).length;
    if (sent > 0 && sent < 3) {
      const missing = (['googleVolume', 'microsoftVolume', 'othersVolume'] as const).find((k) => body[k] === undefined)!;
      ctx.addIssue({ code: 'custom', path: [missing], message: 'googleVolume, microsoftVolume and othersVolume are sent together' });
    } else if (sent === 3 && vols.reduce((x, y) => x! + y!, 0) !== 100) {
      ctx.addIssue({ code: 'custom', path: ['googleVolume'], message: 'googleVolume + microsoftVolume + othersVolume must be exactly 100' });
    }
  });

export const bulkWarmupBody = z.object({ action: z.enum(['start', 'stop']), emailAccountIds: idList(50) }).strict();

// ---- deliverability and reports ----

export const date = z.string().refine(isDate, 'must be a date YYYY-MM-DD');

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

export const rangeQuery = z.object({ from: date, to: date }).strict();
export const bulkReportBody = z.object({ emailAccountIds: idList(50), from: date, to: date }).strict();

// ---- responses (the spec's resources; fields beyond those shown may follow) ----

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

const notFoundItem = z.looseObject({ emailAccountId: z.number().int(), errorCode: z.literal('not_found') });

export const dashboard = z.looseObject({
  totalAccounts: z.number().int(),
  activeWarmups: z.number().int(),
  pausedWarmups: z.number().int(),
  accountsWithErrors: z.number().int(),
  avgSetupScore: z.number(),
});

export const warmupSettingsV1 = z.looseObject({
  emailAccountId: z.number().int(),
  strategy: z.enum(STRATEGIES),
  timeZone: z.string(),
  warmupStatus: z.string(),
  warmupLanguage: z.string(),
  upcomingContentConfig: z.looseObject({ industry: z.string(), topics: z.array(z.string()) }),
  googleVolumePercentage: z.number(),
  microsoftVolumePercentage: z.number(),
  othersVolumePercentage: z.number(),
  maxSendingLimit: z.number(),
  warmUpInitialSendingLimit: z.number(),
  increaseEmailsByNumber: z.number(),
  replyRate: z.number(),
  dailySendingLimit: z.number(),
  dailyReceivingLimit: z.number(),
});

/** Today's warmup activity (Get Warmup Status and Warmup Activity History are the same route). */
export const warmupStatus = z.looseObject({
  emailAccountId: z.number().int(),
  date: z.string(),
  current: z.string(),
  strategy: z.string(),
  dailySendingLimit: z.number(),
  sent: z.number(),
  received: z.number(),
  replied: z.number(),
  spam: z.number(),
  undelivered: z.number(),
  warmupScore: z.number(),
  outreachReadinessStatus: z.string(),
});

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

const espScore = z.looseObject({ deliverabilityRate: z.number(), sentCount: z.number().int(), inboxCount: z.number().int(), spamCount: z.number().int() });
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
export const report = z.looseObject({ emailAccountId: z.number().int(), from: z.string(), to: z.string(), days: z.array(reportDay) });

const ACC = '/v1/email-accounts';

/** The routes of this interface and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  'GET /v1/health': { response: z.looseObject({ status: z.literal('ok') }) },
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
  [`POST ${ACC}/bulk-status`]: { body: bulkStatusBody, response: z.looseObject({ results: z.array(z.union([accountStatus, notFoundItem])) }) },
  [`POST ${ACC}/bulk-delete`]: {
    body: bulkDeleteBody,
    response: z.looseObject({
      results: z.array(z.looseObject({ emailAccountId: z.number().int(), deleted: z.boolean(), errorCode: z.string().optional() })),
    }),
  },
  [`POST ${ACC}/tags/assign`]: { body: tagsBody, response: z.array(accountItem) },
  [`POST ${ACC}/tags/unassign`]: { body: tagsBody, response: z.array(accountItem) },
  [`GET ${ACC}/{emailAccountId}/status`]: { response: accountStatus },
  [`POST ${ACC}/{emailAccountId}/disconnect`]: { body: emptyBody.optional(), response: accountStatus },
  [`DELETE ${ACC}/{emailAccountId}`]: { response: z.looseObject({ emailAccountId: z.number().int(), deleted: z.literal(true) }) },
  'GET /v1/warmup-settings/{emailAccountId}': { response: warmupSettingsV1 },
  'PATCH /v1/warmup-settings/{emailAccountId}': { body: patchBody },
  'GET /v1/warmup-status/{emailAccountId}': { response: warmupStatus },
  'GET /v1/warmup-activity/{emailAccountId}': { response: warmupStatus },
  'POST /v1/warmup/{emailAccountId}/start': { body: emptyBody.optional() },
  'POST /v1/warmup/{emailAccountId}/stop': { body: emptyBody.optional() },
  'POST /v1/warmup/bulk': { body: bulkWarmupBody },
  'GET /v1/setup-score/{emailAccountId}': { response: setupScore },
  'POST /v1/setup-score/{emailAccountId}/refresh': { body: emptyBody.optional(), response: setupScore },
  'GET /v1/dns-health/{emailAccountId}': { response: dnsHealth },
  'POST /v1/deliverability-score/{emailAccountId}': { body: deliverabilityBody, response: deliverabilityScore },
  'GET /v1/reports/export': { query: rangeQuery, envelope: 'csv' },
  'POST /v1/reports/bulk': { body: bulkReportBody, response: z.looseObject({ reports: z.array(z.union([report, notFoundItem])) }) },
  'GET /v1/reports/{emailAccountId}': { query: rangeQuery, response: report },
  'GET /v1/dashboard': { response: dashboard },
};

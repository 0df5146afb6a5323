// Request schemas of the accounts domain: strict, so an unknown field is 400 invalid_request naming it.
import { z } from 'zod';
import { isTimeZone } from '../time.js';
import { pgId } from '../../db/storable.js';
import type { SchemaRegistry } from '../domain.js';

// Here rather than in store.ts: schemas import nothing heavier than zod, so any module may read them
// without an import cycle (store.ts -> warmup -> accounts -> v1 schemas -> these).
export const STATUSES = ['active', 'warming', 'paused', 'error', 'auth-expired', 'disconnected'] as const;

/** An SMTP or IMAP server (accounts.smtp, accounts.imap); shared with the /v1 connect. */
export const connection = z
  .object({
    host: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[A-Za-z0-9.-]+$/, 'must be a host name or IPv4 address'),
    port: z.number().int().min(1).max(65535),
    username: z.string().min(1).max(320),
    password: z.string().min(1).max(1024),
    secure: z.boolean(),
  })
  .strict();

// One rule for time-zone names on both interfaces (IANA spelling, as the /v1 spec asks).
const validTimeZone = isTimeZone;

/** POST /accounts: connect an SMTP/IMAP mailbox. `timeZone` (IANA, default UTC) is optional. */
export const connectSchema = z
  .object({
    emailAddress: z.email().max(320),
    fromName: z.string().trim().min(1).max(200),
    smtp: connection,
    imap: connection,
    timeZone: z.string().min(1).max(64).refine(validTimeZone, 'must be an IANA time zone name').optional(),
  })
  .strict();

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d{1,9}$/, 'must be an integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/**
 * GET /accounts query. `tag` matches accounts carrying the tag: an all-digit value is a tag id,
 * anything else a tag name (case-insensitive). `search` matches email address or from name.
 */
export const listQuerySchema = z
  .object({
    page: int(1, 1_000_000).default(1),
    per_page: int(1, 100).default(25),
    maxLimitMin: int(0, 100).optional(),
    maxLimitMax: int(0, 100).optional(),
    status: z.enum(STATUSES).optional(),
    tag: z.string().min(1).max(64).optional(),
    search: z.string().min(1).max(200).optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.maxLimitMin !== undefined && body.maxLimitMax !== undefined && body.maxLimitMin > body.maxLimitMax) {
      ctx.addIssue({ code: 'custom', path: ['maxLimitMin'], message: 'must not exceed maxLimitMax' });
    }
  });

const accountIds = z.array(pgId).min(1, 'must hold 1 to 50 ids').max(50, 'must hold 1 to 50 ids');

export const bulkStatusSchema = z.object({ accountIds }).strict();

export const bulkTagsSchema = z.object({ accountIds, tagIds: z.array(pgId).max(100) }).strict();

/** The v2 account record (store.ts accountRecord); the spec leaves it open beyond `replyRate` and `status`. */
export const accountRecord = z.looseObject({
  id: z.number().int(),
  workspaceId: z.number().int(),
  emailAddress: z.string(),
  fromName: z.string(),
  provider: z.string(),
  // Response enumerations can gain values without notice (spec): a string, not an enum.
  status: z.string(),
  verification: z.enum(['pending', 'passed', 'failed']),
  warmupMaxLimit: z.number().int(),
  warmupCurrentLimit: z.number().int(),
  warmupMinLimit: z.number().int(),
  replyRate: z.number(),
  tags: z.array(z.unknown()),
});

const WS = '/v2/workspaces/{workspaceId}';

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  [`GET ${WS}/accounts`]: { query: listQuerySchema, response: z.array(accountRecord), paginated: true },
  [`POST ${WS}/accounts`]: { body: connectSchema, response: accountRecord, status: [201] },
  [`POST ${WS}/accounts/bulk-status`]: { body: bulkStatusSchema },
  [`POST ${WS}/accounts/bulk/tags`]: { body: bulkTagsSchema },
  [`GET ${WS}/accounts/{accountId}`]: { response: accountRecord },
  [`DELETE ${WS}/accounts/{accountId}`]: {
    response: z.object({ id: z.number().int(), emailAddress: z.string(), deleted: z.literal(true) }),
  },
  [`POST ${WS}/accounts/{accountId}/disconnect`]: { response: accountRecord },
  [`GET ${WS}/accounts/{accountId}/dns`]: {},
  [`GET ${WS}/accounts/{accountId}/setup-score`]: {},
};

// What the admin API accepts and answers, as zod schemas: the handlers parse with them and the OpenAPI
// document (src/admin-api/openapi.ts) is generated from them, so the two cannot drift apart.
import { z } from 'zod';
import { PLAN_IDS, PLAN_NAME } from '../config/plans.js';
import { ROLES } from '../config/routes.js';
import { MAX_BUDGET, MAX_MONTHLY_QUOTA } from '../access/service/limits.js';
import { isStorableText, pgId, unstorableTextAt } from '../db/storable.js';
import { ADMIN_ERRORS } from './errors.js';
import { keyExpiry, rotateKeyBody } from '../access/key-schemas.js';
import { KEY_TYPE_NAME } from '../access/key-types.js';
import { SCOPE_NAME } from '../config/profile/schema.js';

// Within PostgreSQL's integer: a larger id is refused here, never handed to a query on an integer column.
const id = pgId;

const UNSTORABLE = 'must not hold a NUL character or a lone surrogate';

/** A name: 1 to 100 characters once trimmed, all storable. */
const name = z.string().trim().min(1).max(100).refine(isStorableText, { message: UNSTORABLE });
const time = z.string().describe('ISO 8601 time');
const budget = z.number().int().min(1).max(MAX_BUDGET);

export const ErrorSchema = z.object({
  error: z.object({
    code: z.enum(Object.keys(ADMIN_ERRORS) as [keyof typeof ADMIN_ERRORS, ...(keyof typeof ADMIN_ERRORS)[]]),
    message: z.string(),
    requestId: z.string(),
  }),
});

// Plans are data: any plan of PLANS_FILE. The pattern is checked here, membership in the plans loaded
// now by the service layer (an unknown name is a 400 naming `plan`).
const planName = z
  .string()
  .regex(PLAN_NAME)
  .describe(`A plan of PLANS_FILE; the built-in ones are ${PLAN_IDS.join(', ')}.`);

export const page = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page.'),
  });

export const OrganizationSchema = z.object({
  id,
  name: z.string(),
  plan: planName.nullable(),
  apiAccess: z.boolean(),
  paused: z.boolean(),
  warmupCap: z.number().int().nullable(),
  partnerCallback: z.object({ url: z.string(), verified: z.boolean() }).nullable(),
});

export const WorkspaceSchema = z.object({ id, organizationId: id, name: z.string(), createdAt: time });

// A key type of the profile in force (PROFILE_FILE): the workspace API's workspace, personal and partner, or
// a rest profile's (consumer, ...). Which ones the profile has is checked by the service layer.
const keyType = z
  .string()
  .regex(KEY_TYPE_NAME)
  .describe(
    "A key type of the profile in force: workspace, personal or partner of the workspace API; a rest profile's own (consumer).",
  );

export const KeySchema = z.object({
  id,
  organizationId: id,
  name: z.string(),
  type: keyType,
  hint: z.string().describe('The prefix and first characters of the secret; never enough to use.'),
  workspaceId: id.nullable(),
  userId: id.nullable(),
  role: z.enum(ROLES).nullable(),
  scopes: z.array(z.string()),
  createdBy: id.nullable(),
  createdAt: time,
  revokedAt: time.nullable(),
  expiresAt: time.nullable(),
  status: z.enum(['active', 'expired', 'revoked']),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  lastUsedAt: time.nullable().describe('The last use of any of its secrets, to the minute.'),
  rotatedAt: time.nullable(),
  previousSecret: z
    .object({ hint: z.string(), expiresAt: time, lastUsedAt: time.nullable() })
    .nullable()
    .describe('The secret a rotation replaced, while its grace period runs.'),
});

export const CreatedKeySchema = KeySchema.extend({
  secret: z.string().describe('The secret, shown only in this answer.'),
});
export const RotatedKeySchema = CreatedKeySchema;

const instant = keyExpiry.describe('ISO 8601 date and time');
const metadata = z
  .record(z.string(), z.unknown())
  .nullable()
  .superRefine((m, ctx) => {
    const at = unstorableTextAt(m);
    if (at !== null) ctx.addIssue({ code: 'custom', message: `${UNSTORABLE}${at.field ? ` (at ${at.field})` : ''}` });
  })
  .describe('A JSON object of at most 1 KiB, sent upstream in the signed identity; null: none.');

const scope = z.string().regex(SCOPE_NAME);
/** The field that binds a key of each of the workspace API's types; any other type is a consumer's, bound to its organization. */
const BINDING: Record<string, { need: 'workspaceId' | 'userId' | 'organizationId'; allowed: string[] }> = {
  workspace: { need: 'workspaceId', allowed: ['workspaceId', 'role', 'scopes', 'createdBy'] },
  personal: { need: 'userId', allowed: ['userId', 'scopes'] },
  partner: { need: 'organizationId', allowed: ['organizationId'] },
};
const CONSUMER_BINDING = { need: 'organizationId' as const, allowed: ['organizationId', 'scopes'] };

export const CreateKeyBody = z
  .object({
    type: keyType,
    name,
    workspaceId: id.optional(),
    userId: id.optional(),
    organizationId: id.optional(),
    role: z.enum(ROLES).optional(),
    scopes: z.array(scope).max(32).optional(),
    createdBy: id.optional(),
    expiresAt: instant.nullable().optional(),
    metadata: metadata.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    const { need, allowed } = Object.hasOwn(BINDING, b.type) ? BINDING[b.type] : CONSUMER_BINDING;
    if (b[need] === undefined) ctx.addIssue({ code: 'custom', path: [need], message: `required for a ${b.type} key` });
    for (const f of ['workspaceId', 'userId', 'organizationId', 'role', 'scopes', 'createdBy'] as const) {
      if (b[f] !== undefined && !allowed.includes(f))
        ctx.addIssue({ code: 'custom', path: [f], message: `a ${b.type} key takes no ${f}` });
    }
  });

export const CreateOrganizationBody = z
  .object({
    name,
    plan: planName.nullable().optional().describe('A plan of the profile in force; absent or null: the free plan.'),
    apiAccess: z.boolean().optional().describe('Default true.'),
    paused: z.boolean().optional().describe('Default false.'),
    limits: z
      .object({
        read: budget.optional(),
        write: budget.optional(),
        bulk: budget.optional(),
        monthlyQuota: z.union([z.number().int().min(1).max(MAX_MONTHLY_QUOTA), z.literal('none')]).optional(),
      })
      .strict()
      .optional()
      .describe('Overrides of the plan\'s per-minute budgets and monthly quota ("none": no quota).'),
  })
  .strict();

export const OrganizationChangeBody = z
  .object({
    paused: z.boolean().optional(),
    apiAccess: z.boolean().optional(),
    plan: planName.nullable().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: 'give paused, apiAccess or plan' });

export const UpdateKeyBody = z
  .object({
    name: name.optional(),
    expiresAt: instant.nullable().optional(),
    metadata: metadata.optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: 'give name, expiresAt or metadata' });

export const ExpireKeyBody = z.object({ at: instant.optional().describe('When; now when absent.') }).strict();

export const RotateKeyBody = rotateKeyBody.extend({
  graceSeconds: rotateKeyBody.shape.graceSeconds.describe('How long the replaced secret keeps working; default 86400.'),
});

const layer = z.object({
  limit: z.number().int(),
  used: z.number().int(),
  remaining: z.number().int(),
  reset: z.number().int().describe('Unix seconds'),
});

export const UsageSchema = z.object({
  keyId: id,
  organizationId: id,
  plan: planName,
  windowReset: z.number().int().describe('Unix seconds when the current minute ends'),
  buckets: z
    .record(z.string(), layer)
    .describe('The current minute per bucket (read, write, bulk), or `partner` for a /v1 key.'),
  ip: layer
    .extend({ address: z.string() })
    .nullable()
    .describe('The IP layer of the address given as `ip`, when asked.'),
  monthlyQuota: layer
    .nullable()
    .describe(
      "The organization's monthly quota this calendar month (UTC), read without spending: `reset` is the month's end; null when the organization has no quota.",
    ),
  lastUsedAt: time.nullable(),
});

export const TrafficSchema = z.object({
  organizationId: id,
  points: z.array(
    z.object({
      minute: z.number().int().describe("Unix seconds of the minute's start"),
      accepted: z.number().int(),
      refused: z.number().int(),
    }),
  ),
});

export const AdminTokenSchema = z.object({
  id,
  name: z.string(),
  role: z.enum(['read', 'write']),
  hint: z.string(),
  createdBy: z.string(),
  createdAt: time,
  lastUsedAt: time.nullable(),
  revokedAt: time.nullable(),
});
export const CreatedAdminTokenSchema = AdminTokenSchema.extend({
  token: z.string().describe('The token, shown only in this answer.'),
});
export const CreateAdminTokenBody = z.object({ name, role: z.enum(['read', 'write']) }).strict();

export const MeSchema = z.object({ id, name: z.string(), role: z.enum(['read', 'write']) });

export const AuditEntrySchema = z.object({
  id: z.number().int(),
  at: time,
  actor: z.object({
    kind: z.enum(['admin-token', 'user', 'cli', 'internal', 'seed', 'api-key']),
    id: z.string().nullable(),
    name: z.string().nullable(),
  }),
  // The database role that wrote the row, stamped by the database (null on rows older than the stamp).
  dbUser: z.string().nullable(),
  action: z.string(),
  targetType: z.string(),
  targetIds: z.array(z.string()),
  organizationId: id.nullable(),
  before: z.unknown(),
  after: z.unknown(),
  requestId: z.string().nullable(),
});

const budgetChange = budget
  .nullable()
  .optional()
  .describe("Requests per minute; null: back to the layer above (the organization's, then the plan's).");

export const KeyLimitsBody = z
  .object({ read: budgetChange, write: budgetChange, bulk: budgetChange })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: 'give read, write or bulk (a number, or null for the plan)' });

export const OrganizationLimitsBody = z
  .object({
    read: budgetChange,
    write: budgetChange,
    bulk: budgetChange,
    monthlyQuota: z
      .union([z.number().int().min(1).max(MAX_MONTHLY_QUOTA), z.literal('none')])
      .nullable()
      .optional()
      .describe('Requests per calendar month (UTC); "none": no quota even if the plan has one; null: the plan\'s.'),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, {
    message: 'give read, write, bulk or monthlyQuota (a number, or null for the plan)',
  });

export const LimitsSchema = z.object({
  organizationId: id,
  keyId: id.optional().describe("Present on a key's limits."),
  plan: z.string(),
  overrides: z
    .object({
      read: budget.nullable(),
      write: budget.nullable(),
      bulk: budget.nullable(),
      monthlyQuota: z
        .union([z.number().int(), z.literal('none')])
        .nullable()
        .optional()
        .describe('Organizations only.'),
    })
    .describe('What this organization or key sets itself; null: the layer above.'),
  effective: z
    .object({
      read: z.number().int(),
      write: z.number().int(),
      bulk: z.number().int(),
      monthlyQuota: z.number().int().nullable().describe('null: no quota'),
    })
    .describe("What the gateways apply now: the key's override, else the organization's, else the plan's."),
});

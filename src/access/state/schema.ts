// The declarative state's document (docs/declarative-state.md): what `keygate export` writes and
// `keygate diff` / `keygate apply` read, one document in YAML or JSON. Strict: an unknown field is a
// mistake, never ignored, since a misspelt field silently ignored would apply a state nobody wrote.
// docs/state.schema.json is generated from this schema (stateJsonSchema), for editors and CI linters.
import { z } from 'zod';
import { PLAN_NAME, planSchema } from '../../config/plans.js';
import { ROLES } from '../../config/routes.js';
import { EVENT_TYPES } from '../events/outbox.js';
import { KEY_NAME_MAX, MAX_SCOPES } from '../service/keys.js';
import { KEY_TYPE_NAME, keyTypesOf, type KeyProfile } from '../key-types.js';
import { MAX_BUDGET, MAX_MONTHLY_QUOTA } from '../service/limits.js';
import { ADMIN_TOKEN_ROLES } from '../service/admin-tokens.js';
import { DESCRIPTION_MAX, URL_MAX } from '../events/endpoints.js';

export const STATE_VERSION = 1;

const perMinute = z
  .number()
  .int()
  .min(1)
  .max(MAX_BUDGET)
  .describe("requests per minute; absent: the layer above's (organization, then plan)");

const keyLimits = z.strictObject({
  read: perMinute.optional(),
  write: perMinute.optional(),
  bulk: perMinute.optional(),
});

const orgLimits = z.strictObject({
  read: perMinute.optional(),
  write: perMinute.optional(),
  bulk: perMinute.optional(),
  monthlyQuota: z
    .union([z.number().int().min(1).max(MAX_MONTHLY_QUOTA), z.literal('none')])
    .optional()
    .describe("requests per UTC month; none: no quota; absent: the plan's"),
});

const name = z.string().min(1).max(KEY_NAME_MAX);

const user = z.strictObject({
  email: z.email(),
  role: z.enum(['OWNER', 'MEMBER']).describe('the role in the organization'),
});

const member = z.strictObject({
  email: z.email().describe("a user of the organization's users"),
  role: z.enum(ROLES).describe('the role in the workspace'),
});

const workspace = z.strictObject({
  name,
  members: z.array(member).optional(),
});

const adminToken = z.strictObject({
  name: z.string().min(1).max(100).describe('unique among the active admin tokens'),
  role: z.enum(ADMIN_TOKEN_ROLES),
});

const webhook = z.strictObject({
  url: z.string().min(8).max(URL_MAX).describe('unique among the endpoints'),
  description: z.string().max(DESCRIPTION_MAX).optional(),
  eventTypes: z.array(z.enum(EVENT_TYPES)).optional().describe('absent or empty: every type'),
  enabled: z.boolean().optional().describe('absent: true'),
});

/** A key type's name: any (the JSON Schema's, for every profile), or one of a profile's (parseState's). */
type KeyTypeField = z.ZodType<string>;

const anyKeyType: KeyTypeField = z
  .string()
  .regex(KEY_TYPE_NAME, 'must be a key type name')
  .describe(
    "a key type of the profile in force (PROFILE_FILE): workspace, personal or partner of the workspace API; a rest profile's own (consumer, ...)",
  );

/** The document's schema, its keys' `type` being `keyType`. */
function documentSchema(keyType: KeyTypeField) {
  const key = z.strictObject({
    name: name.describe('unique among the live keys of the organization'),
    type: keyType,
    workspace: name.optional().describe("workspace keys: a workspace of the organization's workspaces"),
    role: z.enum(ROLES).optional().describe('workspace keys; absent: ADMIN'),
    user: z.email().optional().describe("personal keys: a user of the organization's users"),
    scopes: z
      .array(z.string().regex(/^[a-z]+:[a-z]+$/, 'must be a scope (resource:action)'))
      .max(MAX_SCOPES)
      .optional(),
    limits: keyLimits.optional(),
    metadata: z.record(z.string(), z.unknown()).optional().describe('a JSON object of at most 1 KiB'),
    expiresAt: z.iso.datetime({ offset: true }).optional().describe('RFC 3339 with a zone; absent: never'),
    secretFrom: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable')
      .optional()
      .describe('on creation only: the secret is read from this environment variable instead of made and printed'),
  });

  const organization = z.strictObject({
    name: z.string().min(1).describe('unique among the organizations'),
    plan: z
      .string()
      .regex(PLAN_NAME, 'must be a plan name')
      .nullable()
      .optional()
      .describe("absent or null: Free's limits"),
    apiAccess: z.boolean().optional().describe('absent: true'),
    paused: z.boolean().optional().describe('absent: false'),
    limits: orgLimits.optional(),
    users: z.array(user).optional(),
    workspaces: z.array(workspace).optional(),
    keys: z.array(key).optional(),
  });

  return z
    .strictObject({
      version: z.literal(STATE_VERSION),
      plans: z
        .record(z.string(), planSchema)
        .optional()
        .describe('read only: the plans of PLANS_FILE when exported; apply refuses a difference'),
      organizations: z.array(organization).optional(),
      adminTokens: z.array(adminToken).optional(),
      webhooks: z.array(webhook).optional(),
    })
    .describe("keygate's declarative state (docs/declarative-state.md)");
}

/** The document under any profile: what docs/state.schema.json states. */
export const stateSchema = documentSchema(anyKeyType);

const byProfile = new WeakMap<KeyProfile, ReturnType<typeof documentSchema>>();

/** The document under a profile: its keys of the profile's key types (an other is refused naming them). */
export function stateSchemaOf(profile: KeyProfile): ReturnType<typeof documentSchema> {
  let schema = byProfile.get(profile);
  if (!schema) {
    const names = keyTypesOf(profile).map((t) => t.name);
    schema = documentSchema(z.enum(names as [string, ...string[]]));
    byProfile.set(profile, schema);
  }
  return schema;
}

export type StateDocument = z.infer<typeof stateSchema>;
export type OrganizationDoc = NonNullable<StateDocument['organizations']>[number];
export type UserDoc = z.infer<typeof user>;
export type WorkspaceDoc = z.infer<typeof workspace>;
export type MemberDoc = z.infer<typeof member>;
export type KeyDoc = NonNullable<OrganizationDoc['keys']>[number];
export type AdminTokenDoc = z.infer<typeof adminToken>;
export type WebhookDoc = z.infer<typeof webhook>;
export type OrgLimitsDoc = z.infer<typeof orgLimits>;
export type KeyLimitsDoc = z.infer<typeof keyLimits>;

/** The committed docs/state.schema.json, as text: a test keeps the file equal to it. */
export function stateJsonSchema(): string {
  return JSON.stringify(z.toJSONSchema(stateSchema, { target: 'draft-2020-12' }), null, 2) + '\n';
}

// The profile file's shape (docs/profiles.md, The file). What one field cannot say alone (a route's scope
// declared, its service defined, two prefixes apart, two codes apart) is checked by ./load.ts.
import { z } from 'zod';
import { planName, planSchema } from '../plans.js';
import { bucket, method, pathPattern, routeOptions } from '../routes.js';
import { servicesSchema } from '../services.js';

const identity = z.enum(['keygate', 'none']);

/** A field name a key is read from, as node gives it: lower case. */
const headerName = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be a header field name in lower case (authorization, x-api-key)');

const keyTypeName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,31}$/, 'must be 1 to 32 of [a-z0-9_], starting with a letter (consumer)');
const keyPrefix = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{1,15}$/, 'must be 2 to 16 of [A-Za-z0-9_], starting with a letter (shop_)');
const keyType = z.object({ name: keyTypeName, prefix: keyPrefix }).strict();

const headerFamilies = z
  .array(z.enum(['x-ratelimit', 'ietf']))
  .min(1)
  .default(['x-ratelimit', 'ietf']);
const perMinute = z.number().int().positive().max(1e9);

/** An absolute URI (RFC 9457 section 3.1.1): a scheme and what follows it. */
const absoluteUri = (what: string) =>
  z.string().refine((u) => /^[a-z][a-z0-9+.-]*:\S+$/i.test(u) && URL.canParse(u), `must be ${what}`);

// ---- rest -----------------------------------------------------------------------------------------

export const PROFILE_NAME = /^[a-z][a-z0-9-]{0,39}$/;
/** The interface ids of the workspace API: a profile's name is its interface's id, so it may not take them. */
const RESERVED_NAMES = ['v1', 'v2'];
const profileName = z
  .string()
  .regex(PROFILE_NAME, 'must be 1 to 40 of [a-z0-9-], starting with a letter (shop)')
  .refine((n) => !RESERVED_NAMES.includes(n), "v1 and v2 are the workspace API's interfaces; choose another name");

export const SCOPE_NAME = /^[a-z][a-z0-9_-]*:[a-z][a-z0-9_-]*$/;
const scopeName = z.string().regex(SCOPE_NAME, 'must be resource:action of [a-z0-9_-] (orders:read)');

const prefix = z.string().regex(/^(\/[a-z0-9-]+)+$/, 'must be /-separated literals of [a-z0-9-], no trailing / (/api)');

/** A plan as a profile states it: budgets and quota; the workspace API's warmup caps are not a consumer's. */
const profilePlan = planSchema
  .pick({ read: true, write: true, bulk: true, limitMode: true, monthlyQuota: true })
  .extend({ label: z.string().min(1).max(100).optional() })
  .strict();

const restRoute = z
  .object({
    method,
    path: pathPattern,
    scope: scopeName.nullable(),
    bucket,
    ...routeOptions,
  })
  .strict();

const refusal = z
  .object({
    status: z.number().int().min(400).max(599),
    code: z
      .string()
      .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be 1 to 64 of [a-z0-9._-] (missing-scope)')
      .optional(),
    title: z.string().min(1).max(200),
    type: absoluteUri('an absolute URI (https://shop.example/problems/missing-scope)'),
  })
  .partial()
  .strict();

export const restProfileSchema = z
  .object({
    version: z.literal(1),
    name: profileName,
    kind: z.literal('rest'),
    prefix,
    key: z.object({ header: headerName, types: z.array(keyType).min(1).max(16) }).strict(),
    scopes: z.array(scopeName).max(1000),
    plans: z.record(planName, profilePlan),
    limits: z
      .object({ address: perMinute.nullable().default(100), headers: headerFamilies })
      .strict()
      .prefault({}),
    services: servicesSchema.optional(),
    routes: z.array(restRoute).min(1),
    errors: z
      .object({
        typeBase: absoluteUri('an absolute URI ending in / (https://shop.example/problems/)').refine(
          (u) => u.endsWith('/'),
          "must end in / (https://shop.example/problems/): each refusal's type is it followed by its code",
        ),
        refusals: z.record(z.string(), refusal).default({}),
      })
      .strict(),
    identity: identity.default('keygate'),
  })
  .strict();
export type RestProfileFile = z.output<typeof restProfileSchema>;

// ---- workspace ------------------------------------------------------------------------------------

// The workspace API's interfaces are the contract's (docs/v2-interface.md, docs/v1-interface.md): their
// ids, prefixes, models, key types' names and answers are fixed; the file states them, and may change
// what the contract leaves to the operator (the secrets' prefixes, the limits, the fields, the identity).
const workspaceKey = <T extends [z.ZodType, ...z.ZodType[]]>(header: string, types: T) =>
  z.object({ header: z.literal(header), types: z.tuple(types) }).strict();
const namedType = (name: string) => z.object({ name: z.literal(name), prefix: keyPrefix }).strict();

const v2Interface = z
  .object({
    id: z.literal('v2'),
    prefix: z.literal('/v2'),
    model: z.literal('workspace-v2'),
    key: workspaceKey('authorization', [namedType('workspace'), namedType('personal')]),
    limits: z.object({ address: perMinute.nullable(), headers: headerFamilies }).strict(),
    errors: z.literal('workspace'),
    identity,
  })
  .strict();
const v1Interface = z
  .object({
    id: z.literal('v1'),
    prefix: z.literal('/v1'),
    model: z.literal('workspace-v1'),
    key: workspaceKey('x-api-key', [namedType('partner')]),
    limits: z.object({ address: perMinute.nullable(), key: perMinute, headers: headerFamilies }).strict(),
    errors: z.literal('v1'),
    identity,
  })
  .strict();

export const workspaceProfileSchema = z
  .object({
    version: z.literal(1),
    name: profileName,
    kind: z.literal('workspace'),
    interfaces: z.tuple([v2Interface, v1Interface]),
  })
  .strict();
export type WorkspaceProfileFile = z.output<typeof workspaceProfileSchema>;

/** Read first, to pick the schema of the file's kind. */
export const profileKindSchema = z.object({ kind: z.enum(['rest', 'workspace']) });

// The admin API's operations: one table, read by the server (matching, the role each needs) and by the
// OpenAPI generator (src/admin-api/openapi.ts). Handlers only parse their input and format their
// output: every change is an operation of the shared service layer (src/access/service/), made with the
// admin token as the actor, audited and followed by the access-version bump there.
import { isIP } from 'node:net';
import type { z } from 'zod';
import { planOf } from '../config/plans.js';
import { createAdminToken, listAdminTokens, revokeAdminToken } from '../access/service/admin-tokens.js';
import { createKey, getKey, listKeys, profileOf, revokeKey, rotateKey, updateKey } from '../access/service/keys.js';
import {
  createOrganization,
  getOrganization,
  listOrganizations,
  updateOrganization,
} from '../access/service/organizations.js';
import { KEY_TYPE_NAME, keyTypesOf } from '../access/key-types.js';
import { listAudit } from '../access/service/audit.js';
import { getKeyLimits, getOrganizationLimits, setKeyLimits, setOrganizationLimits } from '../access/service/limits.js';
import { BUCKETS, ipCounter, keyCounter, monthCounter, partnerCounter } from '../limits/counters.js';
import { AdminApiError } from './errors.js';
import {
  ID_QUERY,
  PAGE,
  idQuery,
  oneOfQuery,
  pageOf,
  paging,
  service,
  type AdminRoute,
  type QueryParam,
} from './route-kit.js';
import { USAGE_ROUTES } from './usage-routes.js';
import { WEBHOOK_ROUTES } from './webhook-routes.js';
import { OVERVIEW_ROUTES } from './overview-routes.js';
import {
  AdminTokenSchema,
  AuditEntrySchema,
  CreateAdminTokenBody,
  CreatedAdminTokenSchema,
  CreatedKeySchema,
  CreateKeyBody,
  CreateOrganizationBody,
  ExpireKeyBody,
  KeyLimitsBody,
  KeySchema,
  LimitsSchema,
  MeSchema,
  OrganizationChangeBody,
  OrganizationLimitsBody,
  OrganizationSchema,
  page,
  RotateKeyBody,
  RotatedKeySchema,
  TrafficSchema,
  UpdateKeyBody,
  UsageSchema,
  WorkspaceSchema,
} from './schemas.js';
import type { Row } from '../db/types.js';
import type { CounterRef } from '../limits/types.js';
import { isoOrNull } from '../db/time.js';

const wsView = (w: Row) => ({
  id: w.id,
  organizationId: w.organization_id,
  name: w.name,
  createdAt: isoOrNull(w.created_at)!,
});

const KEY_FILTERS: QueryParam[] = [
  { name: 'organization', description: "Only this organization's.", schema: ID_QUERY },
  { name: 'workspace', description: "Only this workspace's.", schema: ID_QUERY },
  {
    name: 'type',
    description: "A key type of the profile in force: workspace, personal or partner; a rest profile's (consumer).",
    schema: { type: 'string', pattern: KEY_TYPE_NAME.source },
  },
  {
    name: 'status',
    description: 'active, expired or revoked.',
    schema: { type: 'string', enum: ['active', 'expired', 'revoked'] },
  },
];

/** Every operation: this file's, then the tables of usage, webhooks and the overview. */
export const ROUTES: AdminRoute[] = [
  {
    method: 'GET',
    path: '/api/me',
    role: 'read',
    summary: 'The admin token this request carries: its id, name and role.',
    status: 200,
    response: MeSchema,
    handle: async ({ token }) => ({ id: token.id, name: token.name, role: token.role }),
  },
  {
    method: 'GET',
    path: '/api/organizations',
    role: 'read',
    summary: 'Organizations, by id.',
    query: PAGE,
    status: 200,
    response: page(OrganizationSchema),
    handle: async ({ ctx, query }) => {
      const { limit, after } = paging(query);
      return pageOf(await service(listOrganizations(ctx, { afterId: after, limit: limit + 1 })), limit);
    },
  },
  {
    method: 'POST',
    path: '/api/organizations',
    role: 'write',
    summary:
      'Create an organization (as `keygate orgs create`): under a rest profile a consumer, which its keys belong to; with its plan and overrides.',
    body: CreateOrganizationBody,
    status: 201,
    response: OrganizationSchema,
    handle: async ({ ctx, body }) => service(createOrganization(ctx, body as z.infer<typeof CreateOrganizationBody>)),
  },
  {
    method: 'GET',
    path: '/api/organizations/{id}',
    role: 'read',
    summary: 'One organization.',
    status: 200,
    response: OrganizationSchema,
    handle: async ({ ctx, params }) => service(getOrganization(ctx, params.id)),
  },
  {
    method: 'PATCH',
    path: '/api/organizations/{id}',
    role: 'write',
    summary:
      'Pause or resume an organization, turn its API access on or off, or change its plan (as `keygate orgs`); the gateways apply it to the next request.',
    body: OrganizationChangeBody,
    status: 200,
    response: OrganizationSchema,
    handle: async ({ ctx, params, body }) => {
      const { mailboxesLowered: _lowered, ...org } = await service(
        updateOrganization(ctx, params.id, body as z.infer<typeof OrganizationChangeBody>),
      );
      return org;
    },
  },
  {
    method: 'GET',
    path: '/api/organizations/{id}/traffic',
    role: 'read',
    summary:
      "The organization's accepted and refused requests per minute over the last hour, from the gateways' own counters.",
    status: 200,
    response: TrafficSchema,
    handle: async ({ ctx, deps, params }) => {
      await service(getOrganization(ctx, params.id));
      return { organizationId: params.id, points: await deps.traffic.series(params.id, 60) };
    },
  },
  {
    method: 'GET',
    path: '/api/organizations/{id}/limits',
    role: 'read',
    summary:
      "The organization's per-minute budgets and monthly quota: its own overrides (null: the plan's) and what the gateways apply now.",
    status: 200,
    response: LimitsSchema,
    handle: async ({ ctx, params }) => service(getOrganizationLimits(ctx, params.id)),
  },
  {
    method: 'PATCH',
    path: '/api/organizations/{id}/limits',
    role: 'write',
    summary:
      'Override the organization\'s per-minute budgets or monthly quota (as `keygate orgs limits`): a number sets, null goes back to the plan\'s, `"monthlyQuota": "none"` drops the plan\'s quota; audited, and every gateway applies it to the next request.',
    body: OrganizationLimitsBody,
    status: 200,
    response: LimitsSchema,
    handle: async ({ ctx, params, body }) =>
      service(setOrganizationLimits(ctx, params.id, body as z.infer<typeof OrganizationLimitsBody>)),
  },
  {
    method: 'GET',
    path: '/api/workspaces',
    role: 'read',
    summary: 'Workspaces (not deleted), by id.',
    query: [{ name: 'organization', description: "Only this organization's.", schema: ID_QUERY }, ...PAGE],
    status: 200,
    response: page(WorkspaceSchema),
    handle: async ({ deps, query }) => {
      const { limit, after } = paging(query);
      const org = idQuery(query, 'organization');
      const rows = await deps.db.query(
        `SELECT * FROM workspaces WHERE deleted_at IS NULL AND id > $1 AND ($2::integer IS NULL OR organization_id = $2) ORDER BY id LIMIT $3`,
        [after, org ?? null, limit + 1],
      );
      return pageOf(rows.map(wsView), limit);
    },
  },
  {
    method: 'GET',
    path: '/api/keys',
    role: 'read',
    summary: 'API keys, by id: never a secret or a hash.',
    query: [...KEY_FILTERS, ...PAGE],
    status: 200,
    response: page(KeySchema),
    handle: async ({ ctx, query }) => {
      const { limit, after } = paging(query);
      const keys = await service(
        listKeys(ctx, {
          organizationId: idQuery(query, 'organization'),
          workspaceId: idQuery(query, 'workspace'),
          type: oneOfQuery(
            query,
            'type',
            keyTypesOf(profileOf(ctx)).map((t) => t.name),
          ),
          status: oneOfQuery(query, 'status', ['active', 'expired', 'revoked'] as const),
          afterId: after,
          limit: limit + 1,
        }),
      );
      return pageOf(keys, limit);
    },
  },
  {
    method: 'POST',
    path: '/api/keys',
    role: 'write',
    summary: 'Create a key (as `keygate keys create`); the answer holds its secret, the only time it is shown.',
    body: CreateKeyBody,
    status: 201,
    response: CreatedKeySchema,
    handle: async ({ ctx, body }) => {
      const b = body as z.infer<typeof CreateKeyBody>;
      const { key, secret } = await service(
        createKey(ctx, {
          ...b,
          expiresAt: b.expiresAt === undefined ? undefined : b.expiresAt === null ? null : new Date(b.expiresAt),
        }),
      );
      return { ...key, secret };
    },
  },
  {
    method: 'GET',
    path: '/api/keys/{id}',
    role: 'read',
    summary: 'One key.',
    status: 200,
    response: KeySchema,
    handle: async ({ ctx, params }) => service(getKey(ctx, params.id)),
  },
  {
    method: 'PATCH',
    path: '/api/keys/{id}',
    role: 'write',
    summary: "Change a key's name, expiry (null: never) or metadata (as `keygate keys update`).",
    body: UpdateKeyBody,
    status: 200,
    response: KeySchema,
    handle: async ({ ctx, params, body }) => {
      const b = body as z.infer<typeof UpdateKeyBody>;
      return service(
        updateKey(ctx, params.id, {
          ...b,
          expiresAt: b.expiresAt === undefined ? undefined : b.expiresAt === null ? null : new Date(b.expiresAt),
        }),
      );
    },
  },
  {
    method: 'POST',
    path: '/api/keys/{id}/expire',
    role: 'write',
    summary: 'Expire a key now (or at `at`): its secrets are refused from then on, as after its expiry.',
    body: ExpireKeyBody,
    status: 200,
    response: KeySchema,
    handle: async ({ ctx, params, body }) => {
      const at = (body as z.infer<typeof ExpireKeyBody>).at;
      return service(updateKey(ctx, params.id, { expiresAt: at ? new Date(at) : new Date(ctx.clock.now()) }));
    },
  },
  {
    method: 'POST',
    path: '/api/keys/{id}/rotate',
    role: 'write',
    summary:
      'Rotate a key (as `keygate keys rotate`): a new secret, shown only in this answer; the old one works for `graceSeconds` more (default a day, 0: stops at once).',
    body: RotateKeyBody,
    status: 200,
    response: RotatedKeySchema,
    handle: async ({ ctx, params, body }) => {
      const g = (body as z.infer<typeof RotateKeyBody>).graceSeconds;
      const { key, secret } = await service(rotateKey(ctx, params.id, g === undefined ? {} : { graceMs: g * 1000 }));
      return { ...key, secret };
    },
  },
  {
    method: 'POST',
    path: '/api/keys/{id}/revoke',
    role: 'write',
    summary: 'Revoke a key (as `keygate keys revoke`): every gateway refuses its very next request. Idempotent.',
    status: 200,
    response: KeySchema,
    handle: async ({ ctx, params }) => service(revokeKey(ctx, params.id)),
  },
  {
    method: 'GET',
    path: '/api/keys/{id}/usage',
    role: 'read',
    summary:
      "The key's live usage: this minute's counters per bucket (read without spending), the IP layer of an address when `ip` is given, this month's quota where kept, and its last use.",
    query: [
      {
        name: 'ip',
        description: 'A client address whose IP layer to show.',
        schema: { type: 'string', maxLength: 45 },
      },
    ],
    status: 200,
    response: UsageSchema,
    handle: async ({ ctx, deps, params, query }) => {
      const k = await service(getKey(ctx, params.id));
      const org = await service(getOrganization(ctx, k.organizationId));
      const plan = planOf(deps.plans(), org.plan);
      // What the gateways apply now (the key's override, else the organization's, else the plan's)
      // and the organization's monthly quota: the principal's budgets, read by the service layer.
      const limits = await service(getKeyLimits(ctx, k.id));
      // The gateway's own counters and budgets.
      const names = k.type === 'partner' ? ['partner'] : BUCKETS;
      const counters: CounterRef[] =
        k.type === 'partner' ? [partnerCounter(k.id)] : BUCKETS.map((b) => keyCounter(k.id, b, limits.effective[b]));
      const ip = query.get('ip');
      if (ip !== null && ip !== '' && !isIP(ip))
        throw new AdminApiError('invalid_request', 'ip must be an IPv4 or IPv6 address');
      if (ip) counters.push(ipCounter(ip));
      // The organization's month counter, last as a month counter must be; cost 0 reads every counter
      // without spending, as the rate-limit routes do.
      const month = monthCounter(k.organizationId, limits.effective.monthlyQuota);
      if (month) counters.push(month);
      const states = await deps.stores.limiter.spend(counters, 0);
      return {
        keyId: k.id,
        organizationId: k.organizationId,
        plan: plan.id,
        windowReset: states[0].reset,
        buckets: Object.fromEntries(names.map((n, i) => [n, states[i]])),
        ip: ip ? { ...states[names.length], address: ip } : null,
        monthlyQuota: month ? states[states.length - 1] : null,
        lastUsedAt: k.lastUsedAt,
      };
    },
  },
  {
    method: 'GET',
    path: '/api/keys/{id}/limits',
    role: 'read',
    summary:
      "The key's per-minute budgets: its own overrides (null: the organization's or the plan's) and what the gateways apply now, with its organization's monthly quota.",
    status: 200,
    response: LimitsSchema,
    handle: async ({ ctx, params }) => service(getKeyLimits(ctx, params.id)),
  },
  {
    method: 'PATCH',
    path: '/api/keys/{id}/limits',
    role: 'write',
    summary:
      "Override a key's per-minute budgets (as `keygate keys limits`): a number sets, null goes back to the organization's or the plan's; audited, and every gateway applies it to the key's next request.",
    body: KeyLimitsBody,
    status: 200,
    response: LimitsSchema,
    handle: async ({ ctx, params, body }) =>
      service(setKeyLimits(ctx, params.id, body as z.infer<typeof KeyLimitsBody>)),
  },
  {
    method: 'GET',
    path: '/api/audit',
    role: 'read',
    summary: 'The audit trail, newest first: who changed what, before and after (never a secret).',
    query: [
      { name: 'organization', description: 'Changes of this organization.', schema: ID_QUERY },
      {
        name: 'action',
        description: 'One action, e.g. `key.revoke`; `key.` for every key action.',
        schema: { type: 'string', pattern: '^[a-z][a-z-]*\\.([a-z][a-z-]*)?$' },
      },
      {
        name: 'actor',
        description: 'The actor kind.',
        schema: { type: 'string', enum: ['admin-token', 'user', 'cli', 'internal', 'seed', 'api-key'] },
      },
      ...PAGE,
    ],
    status: 200,
    response: page(AuditEntrySchema),
    handle: async ({ ctx, query }) => {
      const { limit, after } = paging(query);
      const action = query.get('action') || undefined;
      if (action !== undefined && !/^[a-z][a-z-]*\.([a-z][a-z-]*)?$/.test(action))
        throw new AdminApiError('invalid_request', 'action must look like key.revoke, or key. for every key action');
      const rows = await service(
        listAudit(ctx, {
          organizationId: idQuery(query, 'organization'),
          action,
          actorKind: oneOfQuery(query, 'actor', ['admin-token', 'user', 'cli', 'internal', 'seed', 'api-key'] as const),
          // Newest first: the cursor is the last id seen, the next page holds the smaller ids.
          beforeId: after > 0 ? after : undefined,
          limit: limit + 1,
        }),
      );
      return pageOf(rows, limit);
    },
  },
  {
    method: 'GET',
    path: '/api/admin-tokens',
    role: 'read',
    summary: 'Admin tokens (revoked ones with `all=true`): never a token or a hash.',
    query: [
      {
        name: 'all',
        description: '`true` includes revoked tokens.',
        schema: { type: 'string', enum: ['true', 'false'] },
      },
    ],
    status: 200,
    response: page(AdminTokenSchema),
    handle: async ({ deps, query }) => ({
      items: await listAdminTokens(deps.db, { includeRevoked: query.get('all') === 'true' }),
      nextCursor: null,
    }),
  },
  {
    method: 'POST',
    path: '/api/admin-tokens',
    role: 'write',
    summary: 'Create an admin token; the answer holds the token, the only time it is shown.',
    body: CreateAdminTokenBody,
    status: 201,
    response: CreatedAdminTokenSchema,
    handle: async ({ ctx, body }) => service(createAdminToken(ctx, body as z.infer<typeof CreateAdminTokenBody>)),
  },
  {
    method: 'POST',
    path: '/api/admin-tokens/{id}/revoke',
    role: 'write',
    summary: 'Revoke an admin token: its next request is refused. Idempotent.',
    status: 200,
    response: AdminTokenSchema,
    handle: async ({ ctx, params }) => service(revokeAdminToken(ctx, params.id)),
  },
  ...USAGE_ROUTES,
  ...WEBHOOK_ROUTES,
  ...OVERVIEW_ROUTES,
];

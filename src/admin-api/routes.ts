// The admin API's operations: one table, read by the server (matching, the role each needs) and by the
// OpenAPI generator (src/admin-api/openapi.ts). Handlers parse their input and format their output;
// the changes themselves are the access operations the CLI runs (src/cli/keys.ts, orgs.ts) and the
// admin-token service (src/access/service/admin-tokens.ts).
import type { z } from 'zod';
import { planOf } from '../config/plans.js';
import type { AuthenticatedToken } from '../access/service/admin-tokens.js';
import { createAdminToken, listAdminTokens, revokeAdminToken, AdminTokenError } from '../access/service/admin-tokens.js';
import { createKey } from '../cli/keys.js';
import { changeOrganization } from '../cli/orgs.js';
import { CommandError } from '../cli/output.js';
import { UsageError } from '../cli/args.js';
import { addressKey } from '../limits/address.js';
import { ipv4Value } from '../gateway/client-ip.js';
import { AdminApiError } from './errors.js';
import type { AdminApiDeps } from './server.js';
import {
  AdminTokenSchema,
  AuditEntrySchema,
  CreateAdminTokenBody,
  CreatedAdminTokenSchema,
  CreatedKeySchema,
  CreateKeyBody,
  KeySchema,
  MeSchema,
  OrganizationChangeBody,
  OrganizationSchema,
  page,
  TrafficSchema,
  UsageSchema,
  WorkspaceSchema,
} from './schemas.js';

export interface Call {
  deps: AdminApiDeps;
  token: AuthenticatedToken;
  params: Record<string, number>;
  query: URLSearchParams;
  body: unknown;
  requestId: string;
}

export interface QueryParam {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

export interface AdminRoute {
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  role: 'read' | 'write';
  summary: string;
  query?: QueryParam[];
  body?: z.ZodType;
  status: 200 | 201;
  response: z.ZodType;
  handle(call: Call): Promise<unknown>;
}

const ID_QUERY = { type: 'string', pattern: '^[1-9][0-9]{0,9}$' };
const PAGE: QueryParam[] = [
  { name: 'limit', description: 'Items per page, 1 to 200 (default 50).', schema: { type: 'string', pattern: '^[1-9][0-9]{0,2}$' } },
  { name: 'cursor', description: 'The `nextCursor` of the previous page.', schema: { type: 'string', pattern: '^[0-9]{1,12}$' } },
];

function iso(t: unknown): string | null {
  return t === null || t === undefined ? null : new Date(t as string).toISOString();
}

function idQuery(q: URLSearchParams, name: string): number | undefined {
  const raw = q.get(name);
  if (raw === null || raw === '') return undefined;
  if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > 2_147_483_647) throw new AdminApiError('invalid_request', `${name} must be a positive integer id`);
  return Number(raw);
}

function paging(q: URLSearchParams): { limit: number; after: number } {
  const rawLimit = q.get('limit');
  const limit = rawLimit === null ? 50 : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new AdminApiError('invalid_request', 'limit must be an integer from 1 to 200');
  const rawCursor = q.get('cursor');
  const after = rawCursor === null || rawCursor === '' ? 0 : Number(rawCursor);
  if (!Number.isSafeInteger(after) || after < 0) throw new AdminApiError('invalid_request', 'cursor is not one this API gave');
  return { limit, after };
}

/** Rows fetched one past the page: the extra row says there is a next page. */
function pageOf<T extends { id: number }>(rows: T[], limit: number) {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? String(items[items.length - 1].id) : null };
}

const orgView = (o: Record<string, any>) => ({ id: o.id, name: o.name, plan: o.plan, apiAccess: o.api_access, paused: o.paused, warmupCap: o.warmup_cap, createdAt: iso(o.created_at)! });
const wsView = (w: Record<string, any>) => ({ id: w.id, organizationId: w.organization_id, name: w.name, createdAt: iso(w.created_at)! });

/**
 * Columns that later migrations add to api_keys (expiry, last use): read when present, so this API
 * shows them as soon as the database has them.
 */
async function keyColumns(deps: AdminApiDeps): Promise<Set<string>> {
  if (!deps.keyColumns) {
    deps.keyColumns = deps.db
      .query<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'api_keys'`)
      .then((rows) => new Set(rows.map((r) => r.column_name)));
    deps.keyColumns.catch(() => (deps.keyColumns = undefined));
  }
  return deps.keyColumns;
}

function keyView(k: Record<string, any>, nowMs: number) {
  const expiresAt = iso(k.expires_at);
  const status = k.revoked_at ? 'revoked' : expiresAt && Date.parse(expiresAt) <= nowMs ? 'expired' : 'active';
  return {
    id: k.id,
    organizationId: k.organization_id,
    name: k.name,
    type: k.type,
    hint: k.hint,
    workspaceId: k.workspace_id,
    userId: k.user_id,
    role: k.role,
    scopes: k.scopes,
    createdBy: k.created_by,
    createdAt: iso(k.created_at)!,
    revokedAt: iso(k.revoked_at),
    expiresAt,
    lastUsedAt: iso(k.last_used_at),
    status,
  };
}

async function loadKey(deps: AdminApiDeps, id: number) {
  const rows = await deps.db.query(`SELECT * FROM api_keys WHERE id = $1`, [id]);
  if (!rows.length) throw new AdminApiError('not_found', `no key ${id}`);
  return rows[0];
}

/** The CLI operations' errors in this API's shape: a missing thing 404, a refused input 400. */
async function asApi<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof CommandError) {
      const message = err.message.replace(/^[a-z -]+: /, '');
      throw new AdminApiError(/^no /.test(message) ? 'not_found' : 'invalid_request', message);
    }
    if (err instanceof UsageError) throw new AdminApiError('invalid_request', err.message.replace(/^[a-z -]+: (--)?/, ''));
    if (err instanceof AdminTokenError) throw new AdminApiError(err.kind === 'not_found' ? 'not_found' : 'invalid_request', err.message);
    throw err;
  }
}

function isIp(raw: string): boolean {
  if (raw.includes(':')) return /^[0-9a-fA-F:.]{2,45}$/.test(raw);
  try {
    ipv4Value(raw);
    return /^\d{1,3}(\.\d{1,3}){3}$/.test(raw);
  } catch {
    return false;
  }
}

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
    handle: async ({ deps, query }) => {
      const { limit, after } = paging(query);
      const rows = await deps.db.query(`SELECT * FROM organizations WHERE id > $1 ORDER BY id LIMIT $2`, [after, limit + 1]);
      return pageOf(rows.map(orgView), limit);
    },
  },
  {
    method: 'GET',
    path: '/api/organizations/{id}',
    role: 'read',
    summary: 'One organization.',
    status: 200,
    response: OrganizationSchema,
    handle: async ({ deps, params }) => {
      const rows = await deps.db.query(`SELECT * FROM organizations WHERE id = $1`, [params.id]);
      if (!rows.length) throw new AdminApiError('not_found', `no organization ${params.id}`);
      return orgView(rows[0]);
    },
  },
  {
    method: 'PATCH',
    path: '/api/organizations/{id}',
    role: 'write',
    summary: 'Pause or resume an organization, or change its plan (as `keygate orgs pause|resume|plan`); the gateways apply it to the next request.',
    body: OrganizationChangeBody,
    status: 200,
    response: OrganizationSchema,
    handle: async ({ deps, params, body }) => {
      const b = body as z.infer<typeof OrganizationChangeBody>;
      const ctx = deps.accessContext();
      if (b.paused !== undefined) await asApi(changeOrganization(ctx, 'organizations', params.id, { paused: b.paused }));
      if (b.plan !== undefined) await asApi(changeOrganization(ctx, 'organizations', params.id, { plan: b.plan }));
      const rows = await deps.db.query(`SELECT * FROM organizations WHERE id = $1`, [params.id]);
      return orgView(rows[0]);
    },
  },
  {
    method: 'GET',
    path: '/api/organizations/{id}/traffic',
    role: 'read',
    summary: "The organization's accepted and refused requests per minute over the last hour, from the gateways' own counters.",
    status: 200,
    response: TrafficSchema,
    handle: async ({ deps, params }) => {
      const rows = await deps.db.query(`SELECT id FROM organizations WHERE id = $1`, [params.id]);
      if (!rows.length) throw new AdminApiError('not_found', `no organization ${params.id}`);
      return { organizationId: params.id, points: await deps.traffic.series(params.id, 60) };
    },
  },
  {
    method: 'GET',
    path: '/api/workspaces',
    role: 'read',
    summary: 'Workspaces (not deleted), by id.',
    query: [{ name: 'organization', description: 'Only this organization\'s.', schema: ID_QUERY }, ...PAGE],
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
    query: [
      { name: 'organization', description: 'Only this organization\'s.', schema: ID_QUERY },
      { name: 'workspace', description: 'Only this workspace\'s.', schema: ID_QUERY },
      { name: 'type', description: 'workspace, personal or partner.', schema: { type: 'string', enum: ['workspace', 'personal', 'partner'] } },
      { name: 'status', description: 'active, expired or revoked.', schema: { type: 'string', enum: ['active', 'expired', 'revoked'] } },
      ...PAGE,
    ],
    status: 200,
    response: page(KeySchema),
    handle: async ({ deps, query }) => {
      const { limit, after } = paging(query);
      const cols = await keyColumns(deps);
      const where = ['id > $1'];
      const params: unknown[] = [after];
      const add = (sql: string, v: unknown) => {
        params.push(v);
        where.push(sql.replace('?', `$${params.length}`));
      };
      const org = idQuery(query, 'organization');
      const ws = idQuery(query, 'workspace');
      if (org !== undefined) add('organization_id = ?', org);
      if (ws !== undefined) add('workspace_id = ?', ws);
      const type = query.get('type');
      if (type) {
        if (!['workspace', 'personal', 'partner'].includes(type)) throw new AdminApiError('invalid_request', 'type must be one of workspace, personal, partner');
        add('type = ?', type);
      }
      const status = query.get('status');
      if (status) {
        const expiry = cols.has('expires_at');
        if (status === 'revoked') where.push('revoked_at IS NOT NULL');
        else if (status === 'active') where.push(`revoked_at IS NULL${expiry ? ' AND (expires_at IS NULL OR expires_at > now())' : ''}`);
        else if (status === 'expired') where.push(expiry ? 'revoked_at IS NULL AND expires_at <= now()' : 'false');
        else throw new AdminApiError('invalid_request', 'status must be one of active, expired, revoked');
      }
      params.push(limit + 1);
      const rows = await deps.db.query(`SELECT * FROM api_keys WHERE ${where.join(' AND ')} ORDER BY id LIMIT $${params.length}`, params);
      const now = deps.clock.now();
      return pageOf(rows.map((r) => keyView(r, now)), limit);
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
    handle: async ({ deps, body }) => {
      const b = body as z.infer<typeof CreateKeyBody>;
      const created = await asApi(createKey(deps.accessContext(), { ...b, scopes: b.scopes ?? [] }));
      return { ...keyView(await loadKey(deps, created.id), deps.clock.now()), secret: created.secret };
    },
  },
  {
    method: 'GET',
    path: '/api/keys/{id}',
    role: 'read',
    summary: 'One key.',
    status: 200,
    response: KeySchema,
    handle: async ({ deps, params }) => keyView(await loadKey(deps, params.id), deps.clock.now()),
  },
  {
    method: 'POST',
    path: '/api/keys/{id}/revoke',
    role: 'write',
    summary: 'Revoke a key (as `keygate keys revoke`): every gateway refuses its very next request. Idempotent.',
    status: 200,
    response: KeySchema,
    handle: async ({ deps, params }) => {
      const rows = await deps.db.query(`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *`, [params.id]);
      if (!rows.length) throw new AdminApiError('not_found', `no key ${params.id}`);
      await deps.accessContext().accessChanged(rows[0].organization_id);
      return keyView(rows[0], deps.clock.now());
    },
  },
  {
    method: 'GET',
    path: '/api/keys/{id}/usage',
    role: 'read',
    summary: "The key's live usage: this minute's counters per bucket (read without spending), the IP layer of an address when `ip` is given, this month's quota where kept, and its last use.",
    query: [{ name: 'ip', description: 'A client address whose IP layer to show.', schema: { type: 'string', maxLength: 45 } }],
    status: 200,
    response: UsageSchema,
    handle: async ({ deps, params, query }) => {
      const k = await loadKey(deps, params.id);
      const org = await deps.db.query(`SELECT plan FROM organizations WHERE id = $1`, [k.organization_id]);
      const plan = planOf(deps.plans(), org[0]?.plan ?? null);
      // The gateway's own counter names and budgets (src/gateway/guards/rate-limit.ts).
      const names = k.type === 'partner' ? ['partner'] : ['read', 'write', 'bulk'];
      const counters = k.type === 'partner' ? [{ id: `v1:${k.id}`, limit: 20 }] : (['read', 'write', 'bulk'] as const).map((b) => ({ id: `k:${k.id}:${b}`, limit: plan.plan[b] }));
      const ip = query.get('ip');
      if (ip !== null && !isIp(ip)) throw new AdminApiError('invalid_request', 'ip must be an IPv4 or IPv6 address');
      if (ip) counters.push({ id: `ip:${addressKey(ip)}`, limit: 100 });
      const states = await deps.stores.limiter.spend(counters, 0);
      const buckets = Object.fromEntries(names.map((n, i) => [n, states[i]]));
      const ipState = ip ? { ...states[states.length - 1], address: ip } : null;
      return {
        keyId: k.id,
        organizationId: k.organization_id,
        plan: plan.id,
        windowReset: states[0].reset,
        buckets,
        ip: ipState,
        monthlyQuota: null,
        lastUsedAt: iso(k.last_used_at),
      };
    },
  },
  {
    method: 'GET',
    path: '/api/audit',
    role: 'read',
    summary: 'The audit trail, newest first, when the database has one: who changed what, before and after (never a secret).',
    query: [
      { name: 'organization', description: 'Changes of this organization.', schema: ID_QUERY },
      { name: 'action', description: 'One action, e.g. `key.revoke`.', schema: { type: 'string', maxLength: 64 } },
      { name: 'actor', description: 'The actor kind: admin-token, user, cli, internal or seed.', schema: { type: 'string', maxLength: 32 } },
      ...PAGE,
    ],
    status: 200,
    response: page(AuditEntrySchema),
    handle: async (call) => call.deps.audit.list(call.query, paging(call.query)),
  },
  {
    method: 'GET',
    path: '/api/admin-tokens',
    role: 'read',
    summary: 'Admin tokens (revoked ones with `all=true`): never a token or a hash.',
    query: [{ name: 'all', description: '`true` includes revoked tokens.', schema: { type: 'string', enum: ['true', 'false'] } }],
    status: 200,
    response: page(AdminTokenSchema),
    handle: async ({ deps, query }) => ({ items: await listAdminTokens(deps.db, { includeRevoked: query.get('all') === 'true' }), nextCursor: null }),
  },
  {
    method: 'POST',
    path: '/api/admin-tokens',
    role: 'write',
    summary: 'Create an admin token; the answer holds the token, the only time it is shown.',
    body: CreateAdminTokenBody,
    status: 201,
    response: CreatedAdminTokenSchema,
    handle: async ({ deps, body, token, requestId }) => asApi(createAdminToken(deps.tokenContext(token, requestId), body as z.infer<typeof CreateAdminTokenBody>)),
  },
  {
    method: 'POST',
    path: '/api/admin-tokens/{id}/revoke',
    role: 'write',
    summary: 'Revoke an admin token: its next request is refused. Idempotent.',
    status: 200,
    response: AdminTokenSchema,
    handle: async ({ deps, params, token, requestId }) => asApi(revokeAdminToken(deps.tokenContext(token, requestId), params.id)),
  },
];

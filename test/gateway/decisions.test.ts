// The gateway's decisions on a resolved key (docs/decisions.md sections 3 and 4), row by row: each
// refusal code and where it stands in the order, scope and role caps, personal and workspace keys,
// paused and API-less organizations, plan and override budgets, the monthly quota's counter, /v1.
// A row prints the whole decision (kind, code, bucket, grant, the counters and whether they are spent),
// so a changed rule, order, budget or counter fails the row that shows it.
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/access/principal.js';
import { loadRoutes } from '../../src/config/routes.js';
import { loadPlans, type Plans } from '../../src/config/plans.js';
import {
  decideConsumer,
  decideV1,
  decideV2,
  limitOutcome,
  refusedInstead,
  type Decision,
} from '../../src/gateway/decisions.js';
import { loadProfile } from '../../src/config/profile/load.js';
import type { LimitOverrides } from '../../src/config/budgets.js';
import type { LayerState } from '../../src/limits/types.js';
import { ALL_SCOPES } from '../fixtures/seed.js';

const routes = loadRoutes('config/routes.json');
const shipped = loadPlans('config/plans.json');
// A plan with a monthly quota, beside the shipped ones.
const plans: Plans = {
  ...shipped,
  metered: { ...shipped.growth, label: 'Metered', monthlyQuota: 50_000 },
};

const NO_OVERRIDES: LimitOverrides = { read: null, write: null, bulk: null, monthlyQuota: null };
const PROVISIONING = ['workspace:provision', 'workspace:quota'];
const WORKSPACE_SCOPES = ALL_SCOPES.filter((scope) => !PROVISIONING.includes(scope));

function key(p: Partial<Principal> & { scopes?: ReadonlySet<string> }): Principal {
  return {
    keyId: 7,
    keyType: 'workspace',
    organizationId: 3,
    plan: 'growth',
    apiAccess: true,
    paused: false,
    scopes: new Set(WORKSPACE_SCOPES),
    workspaceId: 100,
    workspaceDeleted: false,
    role: 'ADMIN',
    userId: null,
    orgRole: null,
    memberships: new Map(),
    expiresAt: Infinity,
    metadata: null,
    secretHash: 'h',
    limits: NO_OVERRIDES,
    ...p,
  };
}
const personal = (orgRole: 'OWNER' | 'MEMBER', memberships: [number, Principal['role']][], scopes = WORKSPACE_SCOPES) =>
  key({
    keyType: 'personal',
    workspaceId: null,
    role: null,
    userId: 5,
    orgRole,
    memberships: new Map(memberships as [number, NonNullable<Principal['role']>][]),
    scopes: new Set([...scopes, ...PROVISIONING]),
  });

const K = {
  wsAdmin: key({}),
  wsEditor: key({ role: 'EDITOR' }),
  wsViewer: key({ role: 'VIEWER' }),
  wsReadOnly: key({ scopes: new Set(['accounts:read', 'workspace:read']) }),
  wsNoWorkspaceRead: key({ scopes: new Set(['accounts:read']) }),
  wsDeleted: key({ workspaceDeleted: true }),
  wsProvisioning: key({ role: 'OWNER', scopes: new Set(ALL_SCOPES) }),
  pkOwner: personal('OWNER', [
    [100, 'OWNER'],
    [200, 'VIEWER'],
  ]),
  pkMember: personal('MEMBER', [[100, 'EDITOR']]),
  pkNoScopes: personal('OWNER', [[100, 'OWNER']], []),
  noApi: key({ apiAccess: false }),
  paused: key({ paused: true }),
  noApiPaused: key({ apiAccess: false, paused: true }),
  pausedNoScope: key({ paused: true, scopes: new Set() }),
  free: key({ plan: 'free' }),
  unknownPlan: key({ plan: 'platinum' }),
  nullPlan: key({ plan: null }),
  keyOverride: key({ limits: { ...NO_OVERRIDES, read: 99, bulk: 1 } }),
  metered: key({ plan: 'metered' }),
  quotaOff: key({ plan: 'metered', limits: { ...NO_OVERRIDES, monthlyQuota: 'off' } }),
  ownQuota: key({ limits: { ...NO_OVERRIDES, monthlyQuota: 1234 } }),
  partner: key({ keyType: 'partner', workspaceId: null, role: null, scopes: new Set() }),
  partnerPaused: key({ keyType: 'partner', workspaceId: null, role: null, paused: true }),
  partnerMetered: key({ keyType: 'partner', workspaceId: null, role: null, plan: 'metered' }),
};
type KeyName = keyof typeof K;

const IP = '203.0.113.9';
const request = (method: string, path: string) => ({ method, path, ip: IP });
const v2 = (name: KeyName, method: string, path: string) =>
  decideV2(K[name], request(method, path), { routes: routes.v2, plans });
const v1 = (name: KeyName, method: string, path: string) =>
  decideV1(K[name], request(method, path), { routes: routes.v1, plans });

/** The whole decision on one line: kind, code, bucket, grant, counters (id/limit) and spent or read. */
function show(d: Decision): string {
  const [use, refs] = 'spend' in d.counters ? ['spend', d.counters.spend] : ['peek', d.counters.peek];
  const counters = `${use} ${refs.map((c) => `${c.id}/${c.limit}`).join(',')}`;
  if (d.kind === 'refuse') return `refuse ${d.refusal.code} ${d.bucket} ${counters}`;
  if (d.kind === 'status') return `status ${counters}`;
  const grant = d.grant ? ` ${d.grant.role}@${d.grant.workspaceId}` : '';
  return `admit ${d.bucket}${grant} ${counters}`;
}

// Growth: read 20, write 10, bulk 4; the address layer 100; free: 5, 2, 1.
const V2_ROWS: [KeyName, string, string, string][] = [
  // Admitted: the route's bucket is spent, key first, then the address.
  ['wsAdmin', 'GET', '/v2/workspaces/100/accounts', `admit read ADMIN@100 spend k:7:read/20,ip:${IP}/100`],
  ['wsAdmin', 'POST', '/v2/workspaces/100/accounts', `admit write ADMIN@100 spend k:7:write/10,ip:${IP}/100`],
  ['wsAdmin', 'POST', '/v2/workspaces/100/accounts/bulk/tags', `admit bulk ADMIN@100 spend k:7:bulk/4,ip:${IP}/100`],
  ['wsAdmin', 'GET', '/v2/workspaces/100/billing/plan', `admit read ADMIN@100 spend k:7:read/20,ip:${IP}/100`],
  ['wsViewer', 'GET', '/v2/workspaces/100/accounts/5', `admit read VIEWER@100 spend k:7:read/20,ip:${IP}/100`],
  ['wsEditor', 'PUT', '/v2/workspaces/100/accounts/5/tags', `admit write EDITOR@100 spend k:7:write/10,ip:${IP}/100`],
  // Step 5 before 6 before everything else; nothing spent, the route's bucket still reported.
  ['noApi', 'GET', '/v2/workspaces/100/accounts', `refuse 150007 read peek k:7:read/20,ip:${IP}/100`],
  ['paused', 'GET', '/v2/workspaces/100/accounts', `refuse 040006 read peek k:7:read/20,ip:${IP}/100`],
  ['paused', 'POST', '/v2/workspaces/100/accounts/bulk/tags', `refuse 040006 bulk peek k:7:bulk/4,ip:${IP}/100`],
  ['noApiPaused', 'GET', '/v2/workspaces/100/accounts', `refuse 150007 read peek k:7:read/20,ip:${IP}/100`],
  ['pausedNoScope', 'GET', '/v2/workspaces/999/accounts', `refuse 040006 read peek k:7:read/20,ip:${IP}/100`],
  ['paused', 'GET', '/v2/nowhere', `refuse 040006 read peek k:7:read/20,ip:${IP}/100`],
  // Step 7: no route; the method's bucket.
  ['wsAdmin', 'GET', '/v2/nowhere', `refuse not_found read peek k:7:read/20,ip:${IP}/100`],
  ['wsAdmin', 'DELETE', '/v2/workspaces/100/accounts', `refuse not_found write peek k:7:write/10,ip:${IP}/100`],
  // Step 8: another workspace, a deleted one (everywhere), a personal key's membership.
  ['wsAdmin', 'GET', '/v2/workspaces/200/accounts', `refuse 150004 read peek k:7:read/20,ip:${IP}/100`],
  ['wsReadOnly', 'POST', '/v2/workspaces/200/accounts', `refuse 150004 write peek k:7:write/10,ip:${IP}/100`],
  ['wsDeleted', 'GET', '/v2/workspaces/100/accounts', `refuse 150004 read peek k:7:read/20,ip:${IP}/100`],
  ['wsDeleted', 'GET', '/v2/workspaces', `refuse 150004 read peek k:7:read/20,ip:${IP}/100`],
  ['pkMember', 'GET', '/v2/workspaces/200/accounts', `refuse 150004 read peek k:7:read/20,ip:${IP}/100`],
  ['pkMember', 'GET', '/v2/workspaces/100/accounts', `admit read EDITOR@100 spend k:7:read/20,ip:${IP}/100`],
  ['pkOwner', 'GET', '/v2/workspaces/200/accounts', `admit read VIEWER@200 spend k:7:read/20,ip:${IP}/100`],
  // Step 9: the scope.
  ['wsReadOnly', 'POST', '/v2/workspaces/100/accounts', `refuse 150003 write peek k:7:write/10,ip:${IP}/100`],
  ['pkNoScopes', 'GET', '/v2/workspaces/100/accounts', `refuse 150003 read peek k:7:read/20,ip:${IP}/100`],
  // Step 10: the role caps the scope (accounts:write needs EDITOR, billing:read and workspace:manage ADMIN).
  ['wsViewer', 'POST', '/v2/workspaces/100/accounts', `refuse 150003 write peek k:7:write/10,ip:${IP}/100`],
  ['wsEditor', 'GET', '/v2/workspaces/100/billing/usage', `refuse 150003 read peek k:7:read/20,ip:${IP}/100`],
  ['wsEditor', 'PATCH', '/v2/workspaces/100/members/9', `refuse 150003 write peek k:7:write/10,ip:${IP}/100`],
  ['pkOwner', 'POST', '/v2/workspaces/200/accounts', `refuse 150003 write peek k:7:write/10,ip:${IP}/100`],
  ['pkOwner', 'PATCH', '/v2/workspaces/100/members/9', `admit write OWNER@100 spend k:7:write/10,ip:${IP}/100`],
  // Provisioning scopes: a personal key of an organization owner, never a workspace key or a member.
  ['pkOwner', 'POST', '/v2/workspaces', `admit write null@null spend k:7:write/10,ip:${IP}/100`],
  ['pkOwner', 'PATCH', '/v2/workspaces/quotas', `admit write null@null spend k:7:write/10,ip:${IP}/100`],
  ['pkMember', 'POST', '/v2/workspaces', `refuse 150003 write peek k:7:write/10,ip:${IP}/100`],
  ['wsProvisioning', 'POST', '/v2/workspaces', `refuse 150003 write peek k:7:write/10,ip:${IP}/100`],
  ['wsProvisioning', 'GET', '/v2/workspaces/quotas', `refuse 150003 read peek k:7:read/20,ip:${IP}/100`],
  // GET /v2/workspaces also takes a workspace key holding workspace:read, for its own workspace.
  ['wsViewer', 'GET', '/v2/workspaces', `admit read VIEWER@100 spend k:7:read/20,ip:${IP}/100`],
  ['wsNoWorkspaceRead', 'GET', '/v2/workspaces', `refuse 150003 read peek k:7:read/20,ip:${IP}/100`],
  ['pkOwner', 'GET', '/v2/workspaces', `admit read null@null spend k:7:read/20,ip:${IP}/100`],
  // The status route reads every bucket and the address, spending nothing; its access is still checked.
  ['wsViewer', 'GET', '/v2/workspaces/100/rate-limit', `status peek k:7:read/20,k:7:write/10,k:7:bulk/4,ip:${IP}/100`],
  ['wsAdmin', 'GET', '/v2/workspaces/200/rate-limit', `refuse 150004 read peek k:7:read/20,ip:${IP}/100`],
  ['paused', 'GET', '/v2/workspaces/100/rate-limit', `refuse 040006 read peek k:7:read/20,ip:${IP}/100`],
  // Plan budgets: free, an unknown or null plan as free, the key's and organization's overrides.
  ['free', 'POST', '/v2/workspaces/100/accounts/bulk-status', `admit bulk ADMIN@100 spend k:7:bulk/1,ip:${IP}/100`],
  ['unknownPlan', 'GET', '/v2/workspaces/100/accounts', `admit read ADMIN@100 spend k:7:read/5,ip:${IP}/100`],
  ['nullPlan', 'POST', '/v2/workspaces/100/tags', `admit write ADMIN@100 spend k:7:write/2,ip:${IP}/100`],
  ['keyOverride', 'GET', '/v2/workspaces/100/tags', `admit read ADMIN@100 spend k:7:read/99,ip:${IP}/100`],
  ['keyOverride', 'POST', '/v2/workspaces/100/tags', `admit write ADMIN@100 spend k:7:write/10,ip:${IP}/100`],
  [
    'keyOverride',
    'GET',
    '/v2/workspaces/100/rate-limit',
    `status peek k:7:read/99,k:7:write/10,k:7:bulk/1,ip:${IP}/100`,
  ],
  // The monthly quota: the plan's, switched off, the organization's own; last, spent only when admitted.
  ['metered', 'GET', '/v2/workspaces/100/accounts', `admit read ADMIN@100 spend k:7:read/20,ip:${IP}/100,m:3/50000`],
  ['metered', 'GET', '/v2/workspaces/200/accounts', `refuse 150004 read peek k:7:read/20,ip:${IP}/100,m:3/50000`],
  [
    'metered',
    'GET',
    '/v2/workspaces/100/rate-limit',
    `status peek k:7:read/20,k:7:write/10,k:7:bulk/4,ip:${IP}/100,m:3/50000`,
  ],
  ['quotaOff', 'GET', '/v2/workspaces/100/accounts', `admit read ADMIN@100 spend k:7:read/20,ip:${IP}/100`],
  ['ownQuota', 'POST', '/v2/workspaces/100/tags', `admit write ADMIN@100 spend k:7:write/10,ip:${IP}/100,m:3/1234`],
];

describe('decideV2: steps 5 to 10 of docs/decisions.md section 3', () => {
  it.each(V2_ROWS)('%s %s %s -> %s', (name, method, path, expected) => {
    expect(show(v2(name, method, path))).toBe(expected);
  });

  it('notes the matched route, also on a refusal that comes before step 7', () => {
    const d = v2('paused', 'POST', '/v2/workspaces/100/accounts');
    expect(d.route?.path).toBe('/v2/workspaces/{workspaceId}/accounts');
    expect(v2('wsAdmin', 'GET', '/v2/nowhere').route).toBeNull();
  });

  it('counts an IPv6 client per /64', () => {
    const d = decideV2(
      K.wsAdmin,
      { ...request('GET', '/v2/workspaces/100/tags'), ip: '2001:db8:1:2:3:4:5:6' },
      {
        routes: routes.v2,
        plans,
      },
    );
    expect(show(d)).toBe('admit read ADMIN@100 spend k:7:read/20,ip:2001:db8:1:2::/64/100');
  });
});

const V1_ROWS: [KeyName, string, string, string][] = [
  ['partner', 'GET', '/v1/email-accounts', 'admit read spend v1:7/20'],
  ['partner', 'POST', '/v1/email-accounts', 'admit write spend v1:7/20'],
  ['partnerMetered', 'POST', '/v1/email-accounts/bulk-status', 'admit write spend v1:7/20,m:3/50000'],
  ['partner', 'GET', '/v1/rate-limit', 'status peek v1:7/20'],
  ['partnerMetered', 'GET', '/v1/rate-limit', 'status peek v1:7/20,m:3/50000'],
  ['partner', 'GET', '/v1/nowhere', 'refuse not_found read peek v1:7/20'],
  ['partnerPaused', 'GET', '/v1/email-accounts', 'refuse 040006 read peek v1:7/20'],
  ['partnerPaused', 'GET', '/v1/nowhere', 'refuse 040006 read peek v1:7/20'],
  ['noApi', 'GET', '/v1/email-accounts', 'refuse 150007 read peek v1:7/20'],
];

describe('decideV1: section 4 (the organization, the route, one layer of 20 per key)', () => {
  it.each(V1_ROWS)('%s %s %s -> %s', (name, method, path, expected) => {
    expect(show(v1(name, method, path))).toBe(expected);
  });

  it('notes no route when the organization is refused first (the route is not looked up)', () => {
    expect(v1('partnerPaused', 'GET', '/v1/email-accounts').route).toBe(null);
  });
});

// A rest profile's consumers (docs/profiles.md): test/fixtures/profiles/shop.yaml, free 60/20/5, pro with a
// monthly quota, the address layer 100 (then none).
const shop = loadProfile({
  PROFILE_FILE: 'test/fixtures/profiles/shop.yaml',
  ROUTES_FILE: 'config/routes.json',
  PLANS_FILE: 'config/plans.json',
});
const consumer = (p: Partial<Principal>) =>
  key({ keyType: 'consumer', workspaceId: null, role: null, plan: 'free', scopes: new Set(['orders:read']), ...p });
const C = {
  reader: consumer({}),
  writer: consumer({ scopes: new Set(['orders:read', 'orders:write']) }),
  none: consumer({ scopes: new Set() }),
  pro: consumer({ plan: 'pro' }),
  paused: consumer({ paused: true }),
  noApi: consumer({ apiAccess: false }),
  override: consumer({ limits: { ...NO_OVERRIDES, read: 7 } }),
};
const CONSUMER_ROWS: [keyof typeof C, string, string, string][] = [
  ['reader', 'GET', '/api/orders', `admit read null@null spend k:7:read/60,ip:${IP}/100`],
  ['reader', 'GET', '/api/orders/12', `admit read null@null spend k:7:read/60,ip:${IP}/100`],
  // The scope: held, not held; the route's bucket reported, nothing spent.
  ['reader', 'POST', '/api/orders', `refuse 150003 write peek k:7:write/20,ip:${IP}/100`],
  ['writer', 'POST', '/api/orders', `admit write null@null spend k:7:write/20,ip:${IP}/100`],
  ['none', 'GET', '/api/products/sku-1', `refuse 150003 read peek k:7:read/60,ip:${IP}/100`],
  // The organization before the route and the scope.
  ['noApi', 'GET', '/api/orders', `refuse 150007 read peek k:7:read/60,ip:${IP}/100`],
  ['paused', 'POST', '/api/orders', `refuse 040006 write peek k:7:write/20,ip:${IP}/100`],
  ['reader', 'DELETE', '/api/orders', `refuse not_found write peek k:7:write/20,ip:${IP}/100`],
  // A route without a scope answered by the gateway: every bucket read; the plan's quota last.
  ['none', 'GET', '/api/rate-limit', `status peek k:7:read/60,k:7:write/20,k:7:bulk/5,ip:${IP}/100`],
  ['pro', 'GET', '/api/orders', `admit read null@null spend k:7:read/600,ip:${IP}/100,m:3/1000000`],
  ['override', 'GET', '/api/orders', `admit read null@null spend k:7:read/7,ip:${IP}/100`],
];

describe("decideConsumer: a rest profile's consumer, its scope per route and its layers", () => {
  const iface = shop.interfaces[0];
  const policy = { routes: shop.routes.tables[iface.id], plans: shop.plans, addressLimit: iface.addressLimit };
  it.each(CONSUMER_ROWS)('%s %s %s -> %s', (name, method, path, expected) => {
    expect(show(decideConsumer(C[name], request(method, path), policy))).toBe(expected);
  });

  it('without an address layer the key and the month are the only counters', () => {
    const d = decideConsumer(C.pro, request('GET', '/api/orders'), { ...policy, addressLimit: null });
    expect(show(d)).toBe('admit read null@null spend k:7:read/600,m:3/1000000');
  });
});

describe('refusedInstead: an admitted request refused after all reads its counters, spends none', () => {
  it('keeps the route and bucket, turns spend into peek', () => {
    const admit = v2('wsAdmin', 'POST', '/v2/workspaces/100/accounts/bulk/tags');
    if (admit.kind !== 'admit') throw new Error(show(admit));
    const d = refusedInstead(admit, { code: 'service_unavailable', message: 'no room' });
    expect(show(d)).toBe(`refuse service_unavailable bulk peek k:7:bulk/4,ip:${IP}/100`);
    expect(d.route).toBe(admit.route);
  });
});

describe('limitOutcome: the states read back in the order the counters were named', () => {
  const V2 = { address: true, single: null };
  const V1 = { address: false, single: 'partner' };
  const state = (limit: number, used: number): LayerState => ({ limit, used, remaining: limit - used, reset: 60 });
  const [k, w, b, ip, month] = [state(20, 1), state(10, 2), state(4, 3), state(100, 4), state(50_000, 5)];

  it('an admitted /v2 request: its bucket, the address, the month', () => {
    const d = v2('metered', 'POST', '/v2/workspaces/100/tags');
    expect(limitOutcome(V2, d, [w, ip, month])).toEqual({ key: w, policy: 'write', ip, month });
  });

  it('the status route reports the read bucket and finds the address after the three buckets', () => {
    const d = v2('metered', 'GET', '/v2/workspaces/100/rate-limit');
    expect(limitOutcome(V2, d, [k, w, b, ip, month])).toEqual({ key: k, policy: 'read', ip, month });
  });

  it('/v1: the partner layer, then the month', () => {
    const d = v1('partnerMetered', 'GET', '/v1/email-accounts');
    expect(limitOutcome(V1, d, [k, month])).toEqual({ key: k, policy: 'partner', ip: null, month });
  });

  it('a consumer interface without an address layer: its bucket, then the month', () => {
    const d = v2('metered', 'POST', '/v2/workspaces/100/tags');
    expect(limitOutcome({ address: false, single: null }, d, [w, month])).toEqual({
      key: w,
      policy: 'write',
      ip: null,
      month,
    });
  });
});

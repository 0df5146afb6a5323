// The API description against the running system: one real, valid request to every route of both
// interfaces (config/routes.json) through the gateway and the reference backend. Each answer's status
// must be documented for its operation, its body must validate against the documented schema (JSON
// Schema 2020-12, ajv) and it must carry the documented rate-limit headers.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { startStack, FakeClock, type Res, type Stack } from '../helpers/stack.js';
import { ALL_SCOPES } from '../fixtures/seed.js';
import { startOutsideWorld, type OutsideWorld } from '../helpers/outside-world.js';

type Json = Record<string, any>;
interface RouteRow {
  method: string;
  path: string;
}

const routes = JSON.parse(readFileSync('config/routes.json', 'utf8')) as { v2: RouteRow[]; v1: RouteRow[] };
const DOCS: Record<'v1' | 'v2', Json> = {
  v2: JSON.parse(readFileSync('config/openapi/v2.json', 'utf8')),
  v1: JSON.parse(readFileSync('config/openapi/v1.json', 'utf8')),
};

// ajv-formats is CommonJS: its default export arrives as the module object under some loaders.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ??
  addFormatsModule) as unknown as AddFormats;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
for (const api of ['v2', 'v1'] as const) ajv.addSchema(DOCS[api], `https://keygate.test/${api}`);

const pointer = (tokens: string[]) =>
  '#/' + tokens.map((t) => encodeURIComponent(t.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

/** The documented response of an operation for a status (following a components/responses reference). */
function documented(api: 'v1' | 'v2', path: string, method: string, status: number) {
  const op = DOCS[api].paths[path.replace(/:str\}/g, '}')]?.[method.toLowerCase()];
  if (!op) return null;
  let tokens = ['paths', path.replace(/:str\}/g, '}'), method.toLowerCase(), 'responses', String(status)];
  let resp = op.responses[String(status)];
  if (!resp) return null;
  if (resp.$ref) {
    tokens = resp.$ref.slice(2).split('/');
    resp = DOCS[api].components.responses[tokens[2]];
  }
  const [type] = Object.keys(resp.content ?? {});
  return { resp, type, schemaRef: `https://keygate.test/${api}${pointer([...tokens, 'content', type, 'schema'])}` };
}

// ---------------------------------------------------------------- what each route is sent

const server = (host: string, port: number, secure: boolean) => ({
  host,
  port,
  username: 'user',
  password: 'secret',
  secure,
});
const CONNECTION = { smtp: server('smtp.acme.test', 587, false), imap: server('imap.acme.test', 993, true) };
const WS = '/v2/workspaces/{workspaceId}';
const ACC = `${WS}/accounts/{accountId}`;

/** Ids the requests create, used by later requests (a new account, member, provider workspace). */
const made: Record<string, string> = {};

interface Call {
  params?: Record<string, string | (() => string)>;
  query?: string;
  body?: unknown;
}
const CALLS: Record<string, Call> = {
  'POST /v2/workspaces': { body: { name: 'Contract', dailyWarmupBudget: 0 } },
  'PATCH /v2/workspaces/quotas': { body: { quotas: [{ workspaceId: 101, dailyWarmupBudget: 100 }] } },
  [`PATCH ${WS}`]: { body: { name: 'Main' } },
  [`GET ${WS}/accounts`]: { query: 'page=1&per_page=10' },
  [`POST ${WS}/accounts`]: {
    body: { emailAddress: 'contract@acme.test', fromName: 'Contract', ...CONNECTION, timeZone: 'UTC' },
  },
  [`POST ${WS}/accounts/oauth`]: {
    body: {
      provider: 'google',
      emailAddress: 'oauth@acme.test',
      accessToken: 'token',
      expiresAt: '2030-01-01T00:00:00Z',
    },
  },
  [`POST ${WS}/accounts/oauth-url`]: { body: { provider: 'microsoft', redirectUri: 'https://app.acme.test/callback' } },
  [`POST ${WS}/accounts/bulk/tags`]: { body: { accountIds: [5000], tagIds: [1, 2] } },
  [`POST ${WS}/accounts/bulk-status`]: { body: { accountIds: [5000, 5001] } },
  [`DELETE ${ACC}`]: { params: { '{accountId}': () => made.account } },
  [`POST ${ACC}/disconnect`]: { params: { '{accountId}': '5001' } },
  [`PATCH ${ACC}/warmup/settings`]: { body: { warmupMaxLimit: 40 } },
  [`PUT ${ACC}/tags`]: { body: { tagIds: [1] } },
  [`POST ${WS}/tags`]: { body: { name: 'contract' } },
  [`GET ${WS}/notifications`]: { query: 'limit=2' },
  [`POST ${WS}/members`]: { body: { email: 'invitee@acme.test', role: 'VIEWER' } },
  [`PATCH ${WS}/members/{userId}`]: { body: { role: 'EDITOR' } },
  [`DELETE ${WS}/members/{userId}`]: { params: { '{userId}': () => made.member } },
  [`POST ${WS}/provider-workspaces`]: { body: { provider: 'google', adminEmail: 'admin@contract.test' } },
  'POST /v1/email-accounts': {
    body: { fromEmail: 'contract1@acme.test', fromName: 'Contract', ...CONNECTION, timeZone: 'UTC', workspaceId: null },
  },
  'GET /v1/email-accounts': { query: 'limit=5&tags=priority' },
  'POST /v1/email-accounts/bulk-status': { body: { emailAccountIds: [5000, 5001, 4999] } },
  'POST /v1/email-accounts/bulk-delete': { body: { emailAccountIds: [5002, 4999] } },
  'POST /v1/email-accounts/tags/assign': { body: { emailAccountIds: [5000], tags: ['vip'] } },
  'POST /v1/email-accounts/tags/unassign': { body: { emailAccountIds: [5000], tags: ['vip'] } },
  'POST /v1/email-accounts/{emailAccountId}/disconnect': { params: { '{emailAccountId}': '5100' } },
  'DELETE /v1/email-accounts/{emailAccountId}': { params: { '{emailAccountId}': () => made.v1Account } },
  // Another tenant than /v2's: one tenant is registered once per organization.
  'POST /v1/workspaces': { body: { provider: 'google', adminEmail: 'partner-admin@contract.test' } },
  'PATCH /v1/warmup-settings/{emailAccountId}': {
    body: { strategy: 'progressive', maxSendingLimit: 40, replyRate: 30 },
  },
  'POST /v1/warmup/bulk': { body: { action: 'stop', emailAccountIds: [5000] } },
  'POST /v1/deliverability-score/{emailAccountId}': {
    body: { startDate: '2026-11-01', endDate: '2026-11-20', esps: ['gmail', 'other'] },
  },
  'GET /v1/reports/export': { query: 'from=2026-11-01&to=2026-11-20' },
  'POST /v1/reports/bulk': { body: { emailAccountIds: [5000], from: '2026-11-01', to: '2026-11-20' } },
  'GET /v1/reports/{emailAccountId}': { query: 'from=2026-11-01&to=2026-11-20' },
};

const PARAMS: Record<string, string | (() => string)> = {
  '{workspaceId}': '100',
  '{accountId}': '5000',
  '{emailAccountId}': '5000',
  '{notificationId}': '1',
  '{userId}': '12',
  '{providerWorkspaceId}': () => made.providerWorkspace,
  '{workspaceId:str}': () => made.v1Workspace,
};

/** The answers that are not a success, and why (every other route must succeed). */
const NOT_2XX: Record<string, number> = {
  // Always 501 not_implemented (v1 spec).
  'POST /v1/email-accounts/oauth': 501,
};

/** Runs after the others: they remove what earlier requests read. */
const LAST = (k: string) => k.startsWith('DELETE ') || k === 'POST /v1/email-accounts/bulk-delete';

// ---------------------------------------------------------------- the stack

const clock = new FakeClock();
let s: Stack;
let world: OutsideWorld;

// A key of its own for every request, so that no request meets a spent bucket in the one window.
const secret = (prefix: string, tag: string, i: number) =>
  `${prefix}${tag}${String(i).padStart(4, '0')}`.padEnd(prefix.length + 36, '0');
const ROUTE_COUNT = routes.v2.length + routes.v1.length;
const WS_KEYS = Array.from({ length: ROUTE_COUNT }, (_, i) => secret('svc_ws_', 'ContractWs', i));
const OWNER_KEYS = Array.from({ length: ROUTE_COUNT }, (_, i) => secret('svc_pk_', 'ContractOwner', i));
const PARTNER_KEYS = Array.from({ length: ROUTE_COUNT }, (_, i) => secret('svc_v1_', 'ContractPartner', i));

beforeAll(async () => {
  // The token profile lookup answers the mailbox the partner OAuth request names.
  world = await startOutsideWorld({ emailAddress: 'oauth@acme.test' });
  world.providers.google.set('admin@contract.test', {
    mailboxes: [{ email: 'm1@contract.test', displayName: 'M One' }, { email: 'm2@contract.test' }],
  });
  world.providers.google.set('partner-admin@contract.test', { mailboxes: [{ email: 'm3@contract.test' }] });
  s = await startStack({
    clock,
    env: world.env,
    extra: {
      apiKeys: [
        ...WS_KEYS.map((k, i) => ({
          id: 8000 + i,
          secret: k,
          name: `contract ws ${i}`,
          workspaceId: 100,
          role: 'ADMIN',
          scopes: ALL_SCOPES,
          createdBy: 10,
        })),
        ...OWNER_KEYS.map((k, i) => ({
          id: 8200 + i,
          secret: k,
          name: `contract owner ${i}`,
          userId: 10,
          scopes: ALL_SCOPES,
        })),
        ...PARTNER_KEYS.map((k, i) => ({ id: 8400 + i, secret: k, name: `contract partner ${i}`, organizationId: 1 })),
      ],
    },
  });
});
afterAll(async () => {
  await s?.close();
  await world?.close();
});

// ---------------------------------------------------------------- the checks

let slot = 0;
async function call(api: 'v1' | 'v2', r: RouteRow): Promise<Res> {
  const key = `${r.method} ${r.path}`;
  const c = CALLS[key] ?? {};
  const params = { ...PARAMS, ...c.params };
  const path = r.path.replace(/\{[A-Za-z]+(:str)?\}/g, (m) => {
    const v = params[m];
    const value = typeof v === 'function' ? v() : v;
    if (!value) throw new Error(`${key}: no value for ${m} (an earlier request should have made it)`);
    return value;
  });
  const i = slot++;
  // Provisioning and budgets need a personal key of an organization owner (docs/decisions.md section 6).
  const owner = /^\/v2\/workspaces(\/quotas)?$/.test(r.path);
  const auth = api === 'v1' ? { apiKey: PARTNER_KEYS[i] } : { key: owner ? OWNER_KEYS[i] : WS_KEYS[i] };
  const body = c.body ?? (r.method === 'POST' ? {} : undefined);
  return s.request(r.method, c.query ? `${path}?${c.query}` : path, {
    ...auth,
    body,
    ip: `10.88.${Math.floor(i / 200)}.${(i % 200) + 1}`,
  });
}

function remember(key: string, res: Res) {
  const d = res.body?.data ?? res.body;
  if (key === `POST ${WS}/accounts`) made.account = String(d.id);
  if (key === `POST ${WS}/members`) made.member = String(d.userId ?? d.id);
  if (key === `POST ${WS}/provider-workspaces`) made.providerWorkspace = String(d.id);
  if (key === 'POST /v1/email-accounts') made.v1Account = String(d.id);
  if (key === 'POST /v1/workspaces') made.v1Workspace = String(d.workspaceId);
}

function check(api: 'v1' | 'v2', r: RouteRow, res: Res) {
  const key = `${r.method} ${r.path}`;
  const doc = documented(api, r.path, r.method, res.status);
  expect(doc, `${key}: status ${res.status} is not documented (${res.text.slice(0, 300)})`).not.toBeNull();
  const type = res.headers.get('content-type') ?? '';
  expect(type.startsWith(doc!.type), `${key}: content-type ${type}, documented ${doc!.type}`).toBe(true);
  if (doc!.type === 'application/json') {
    const validate = ajv.getSchema(doc!.schemaRef) ?? ajv.compile({ $ref: doc!.schemaRef });
    const ok = validate(res.body);
    expect(ok, `${key} ${res.status}: ${ajv.errorsText(validate.errors)}\n${res.text.slice(0, 600)}`).toBe(true);
  }
  for (const name of Object.keys(doc!.resp.headers ?? {})) {
    expect(res.headers.get(name), `${key} ${res.status}: header ${name}`).not.toBeNull();
  }
  if (NOT_2XX[key]) expect(res.status, key).toBe(NOT_2XX[key]);
  else expect(res.status, `${key}: ${res.text.slice(0, 300)}`).toBeLessThan(300);
}

for (const api of ['v2', 'v1'] as const) {
  describe(`${api}: every route answers as its description says`, () => {
    const ordered = [
      ...routes[api].filter((r) => !LAST(`${r.method} ${r.path}`)),
      ...routes[api].filter((r) => LAST(`${r.method} ${r.path}`)),
    ];
    for (const r of ordered) {
      it(`${r.method} ${r.path}`, async () => {
        const res = await call(api, r);
        if (res.status < 300) remember(`${r.method} ${r.path}`, res);
        check(api, r, res);
      });
    }
  });
}

describe('refusals are documented too', () => {
  it('no key, an unknown key and an unknown route answer documented bodies', async () => {
    const cases: [api: 'v1' | 'v2', RouteRow, Res][] = [
      [
        'v2',
        { method: 'GET', path: `${WS}/tags` },
        await s.request('GET', '/v2/workspaces/100/tags', { ip: '10.89.0.1' }),
      ],
      [
        'v2',
        { method: 'GET', path: `${WS}/tags` },
        await s.request('GET', '/v2/workspaces/100/tags', { key: 'svc_ws_' + 'x'.repeat(36), ip: '10.89.0.2' }),
      ],
      ['v1', { method: 'GET', path: '/v1/dashboard' }, await s.request('GET', '/v1/dashboard', { ip: '10.89.0.3' })],
    ];
    for (const [api, r, res] of cases) {
      const doc = documented(api, r.path, r.method, res.status);
      expect(doc, `${r.path} ${res.status}`).not.toBeNull();
      const validate = ajv.compile({ $ref: doc!.schemaRef });
      expect(validate(res.body), `${r.path} ${res.status}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
    expect(cases.map(([, , res]) => res.status)).toEqual([401, 401, 401]);
  });
});

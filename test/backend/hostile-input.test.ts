// Hostile input never reaches the database: every route of both interfaces (config/routes.json), fed
// through the real gateway in every path id, every query parameter it documents and every body field,
// answers a 4xx in its interface's own error shape, never a 5xx. Strings PostgreSQL cannot store (NUL,
// lone surrogates) and numbers beyond its integer range are refused with 400 invalid_request naming
// the field (README, "Ids"; an id in the path beyond that range names nothing: 404).
import type http from 'node:http';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Res, type Stack } from '../helpers/stack.js';
import { ALL_SCOPES } from '../fixtures/seed.js';
import { startOutsideWorld, type OutsideWorld } from '../helpers/outside-world.js';
import { fetchRes } from '../helpers/stack.js';
import { encodeIdentity, sign } from '../../src/http/identity.js';
import { Router } from '../../src/backend/router.js';
import { createBackendServer, envelopeFor } from '../../src/backend/server.js';
import { listenLocal } from '../helpers/listen.js';
import { concretePath } from '../helpers/routes.js';

interface RouteRow {
  method: string;
  path: string;
  gateway?: boolean;
}
const file = JSON.parse(readFileSync('config/routes.json', 'utf8')) as { v2: RouteRow[]; v1: RouteRow[] };
const ROUTES = [...file.v2, ...file.v1];

// ---------------------------------------------------------------- what each route takes

const server = (host: string, port: number, secure: boolean) => ({
  host,
  port,
  username: 'user',
  password: 'secret',
  secure,
});
const CONNECTION = { smtp: server('smtp.acme.test', 587, false), imap: server('imap.acme.test', 993, true) };

/** The query parameters each route documents and valid bodies whose every field is then made hostile. */
interface Shape {
  query?: string[];
  bodies?: Record<string, unknown>[];
}
const NONE: Shape = {};
const EMPTY_BODY: Shape = { bodies: [{}] };
const WS = '/v2/workspaces/{workspaceId}';
const ACC = `${WS}/accounts/{accountId}`;
const SHAPES: Record<string, Shape> = {
  'GET /v2/workspaces': NONE,
  'POST /v2/workspaces': { bodies: [{ name: 'Hostile input', dailyWarmupBudget: 0 }] },
  'GET /v2/workspaces/quotas': NONE,
  'PATCH /v2/workspaces/quotas': { bodies: [{ quotas: [{ workspaceId: 101, dailyWarmupBudget: 100 }] }] },
  [`GET ${WS}`]: NONE,
  [`PATCH ${WS}`]: { bodies: [{ name: 'Main' }] },
  [`GET ${WS}/rate-limit`]: NONE,
  [`GET ${WS}/accounts`]: { query: ['page', 'per_page', 'maxLimitMin', 'maxLimitMax', 'status', 'tag', 'search'] },
  [`POST ${WS}/accounts`]: {
    bodies: [{ emailAddress: 'hostile@acme.test', fromName: 'Hostile', ...CONNECTION, timeZone: 'UTC' }],
  },
  [`POST ${WS}/accounts/oauth`]: {
    bodies: [
      { provider: 'google', emailAddress: 'oauth@acme.test', accessToken: 'token', expiresAt: '2030-01-01T00:00:00Z' },
    ],
  },
  [`POST ${WS}/accounts/oauth-url`]: {
    bodies: [{ provider: 'microsoft', redirectUri: 'https://app.acme.test/callback', loginHint: 'oauth@acme.test' }],
  },
  [`POST ${WS}/accounts/bulk/tags`]: { bodies: [{ accountIds: [5000, 5001], tagIds: [1, 2] }] },
  [`POST ${WS}/accounts/bulk-status`]: { bodies: [{ accountIds: [5000, 5001] }] },
  [`GET ${ACC}`]: NONE,
  [`DELETE ${ACC}`]: NONE,
  [`POST ${ACC}/disconnect`]: EMPTY_BODY,
  [`GET ${ACC}/dns`]: NONE,
  [`GET ${ACC}/setup-score`]: NONE,
  [`GET ${ACC}/stats`]: NONE,
  [`GET ${ACC}/deliverability`]: NONE,
  [`GET ${ACC}/warmup/settings`]: NONE,
  [`PATCH ${ACC}/warmup/settings`]: { bodies: [{ warmupMaxLimit: 40, replyRateMode: 'CUSTOM', replyRate: 10 }] },
  [`POST ${ACC}/warmup/enable`]: EMPTY_BODY,
  [`POST ${ACC}/warmup/pause`]: EMPTY_BODY,
  [`POST ${ACC}/warmup/resume`]: EMPTY_BODY,
  [`GET ${ACC}/warmup/activity`]: { query: ['page', 'per_page'] },
  [`PUT ${ACC}/tags`]: { bodies: [{ tagIds: [1, 2] }] },
  [`GET ${WS}/tags`]: NONE,
  [`POST ${WS}/tags`]: { bodies: [{ name: 'hostile' }] },
  [`GET ${WS}/analytics/overview`]: NONE,
  [`GET ${WS}/analytics/trends`]: NONE,
  [`GET ${WS}/analytics/leaderboard`]: { query: ['limit'] },
  [`GET ${WS}/analytics/deliverability`]: NONE,
  [`GET ${WS}/notifications`]: { query: ['unreadOnly', 'cursor', 'limit'] },
  [`POST ${WS}/notifications/read-all`]: EMPTY_BODY,
  [`POST ${WS}/notifications/{notificationId}/read`]: EMPTY_BODY,
  [`GET ${WS}/members`]: NONE,
  [`POST ${WS}/members`]: { bodies: [{ email: 'invitee@acme.test', role: 'VIEWER' }] },
  [`PATCH ${WS}/members/{userId}`]: { bodies: [{ role: 'VIEWER' }] },
  [`DELETE ${WS}/members/{userId}`]: NONE,
  [`GET ${WS}/provider-workspaces`]: NONE,
  [`POST ${WS}/provider-workspaces`]: {
    bodies: [
      { provider: 'google', adminEmail: 'admin@hostile.test' },
      { provider: 'microsoft', tenantId: 'hostile-tenant' },
    ],
  },
  [`GET ${WS}/provider-workspaces/{providerWorkspaceId}/preview`]: { query: ['search', 'domain', 'page', 'limit'] },
  [`POST ${WS}/provider-workspaces/{providerWorkspaceId}/sync`]: EMPTY_BODY,
  [`GET ${WS}/provider-workspaces/{providerWorkspaceId}/sync`]: NONE,
  [`GET ${WS}/billing/plan`]: NONE,
  [`GET ${WS}/billing/usage`]: NONE,
  [`GET ${WS}/billing/capabilities`]: NONE,

  'GET /v1/rate-limit': NONE,
  'GET /v1/health': NONE,
  'GET /v1/email-accounts': { query: ['search', 'sort', 'sortBy', 'status', 'tags', 'page', 'limit'] },
  'POST /v1/email-accounts': {
    bodies: [
      { fromEmail: 'hostile1@acme.test', fromName: 'Hostile', ...CONNECTION, timeZone: 'UTC', workspaceId: null },
    ],
  },
  'POST /v1/email-accounts/oauth': EMPTY_BODY,
  'POST /v1/email-accounts/bulk-status': { bodies: [{ emailAccountIds: [5000, 5001] }] },
  'POST /v1/email-accounts/bulk-delete': { bodies: [{ emailAccountIds: [5002] }] },
  'POST /v1/email-accounts/tags/assign': { bodies: [{ emailAccountIds: [5000], tags: ['vip', 'sales'] }] },
  'POST /v1/email-accounts/tags/unassign': { bodies: [{ emailAccountIds: [5000], tags: ['vip', 'sales'] }] },
  'GET /v1/email-accounts/{emailAccountId}/status': NONE,
  'POST /v1/email-accounts/{emailAccountId}/disconnect': EMPTY_BODY,
  'DELETE /v1/email-accounts/{emailAccountId}': NONE,
  'POST /v1/workspaces': {
    bodies: [
      { provider: 'google', adminEmail: 'admin@hostile.test' },
      { provider: 'microsoft', tenantId: 'hostile-tenant' },
    ],
  },
  'GET /v1/workspaces/{workspaceId:str}/preview': { query: ['search', 'domain', 'page', 'limit'] },
  'POST /v1/workspaces/{workspaceId:str}/sync': EMPTY_BODY,
  'GET /v1/workspaces/{workspaceId:str}/sync': NONE,
  'GET /v1/warmup-settings/{emailAccountId}': NONE,
  'PATCH /v1/warmup-settings/{emailAccountId}': {
    bodies: [
      {
        strategy: 'progressive',
        maxSendingLimit: 40,
        warmUpInitialSendingLimit: 10,
        increaseEmailsByNumber: 2,
        replyRate: 30,
        timeZone: 'UTC',
        timeSlots: [{ day: 'monday', fromHour: 9, fromMinute: 0, toHour: 17, toMinute: 0 }],
        warmupLanguage: 'English',
        upcomingContentConfig: { industry: 'software', topics: ['email'] },
        googleVolume: 40,
        microsoftVolume: 40,
        othersVolume: 20,
      },
    ],
  },
  'GET /v1/warmup-status/{emailAccountId}': NONE,
  'GET /v1/warmup-activity/{emailAccountId}': NONE,
  'POST /v1/warmup/{emailAccountId}/start': EMPTY_BODY,
  'POST /v1/warmup/{emailAccountId}/stop': EMPTY_BODY,
  'POST /v1/warmup/bulk': { bodies: [{ action: 'stop', emailAccountIds: [5000] }] },
  'GET /v1/setup-score/{emailAccountId}': NONE,
  'POST /v1/setup-score/{emailAccountId}/refresh': EMPTY_BODY,
  'GET /v1/dns-health/{emailAccountId}': NONE,
  'POST /v1/deliverability-score/{emailAccountId}': {
    bodies: [{ startDate: '2026-11-01', endDate: '2026-11-20', esps: ['gmail', 'other'] }],
  },
  'GET /v1/reports/export': { query: ['from', 'to'] },
  'POST /v1/reports/bulk': { bodies: [{ emailAccountIds: [5000], from: '2026-11-01', to: '2026-11-20' }] },
  'GET /v1/reports/{emailAccountId}': { query: ['from', 'to'] },
  'GET /v1/dashboard': NONE,
};

/** The path parameters' valid values: seeded resources of the base seed. */
const VALID_PARAM: Record<string, string> = {
  '{workspaceId}': '100',
  '{accountId}': '5000',
  '{emailAccountId}': '5000',
  '{notificationId}': '1',
  '{userId}': '12',
  '{providerWorkspaceId}': '1',
  '{workspaceId:str}': '1',
};
const VALID_QUERY: Record<string, string> = { from: '2026-11-01', to: '2026-11-20' };

// ---------------------------------------------------------------- the hostile values

const HUGE = 'x'.repeat(100 * 1024);
/** JSON values put in place of the body and of every body field. `refuse`: PostgreSQL cannot store it. */
const BODY_VALUES: { name: string; value: unknown; refuse?: boolean }[] = [
  { name: 'NUL', value: '\u0000', refuse: true },
  { name: 'text with NUL', value: 'a\u0000b', refuse: true },
  { name: 'lone high surrogate', value: '\ud800', refuse: true },
  { name: 'text with lone low surrogate', value: 'x\udc00y', refuse: true },
  // eslint-disable-next-line no-loss-of-precision -- a client's JSON number beyond 2^53 is the input under test
  { name: '20 digits', value: 12345678901234567890, refuse: true },
  { name: '2^31', value: 2147483648, refuse: true },
  { name: '20 digits as text', value: '12345678901234567890' },
  { name: '2^31 as text', value: '2147483648' },
  { name: 'negative', value: -1 },
  { name: 'float', value: 1.5 },
  { name: 'zero', value: 0 },
  { name: '100 KB string', value: HUGE },
  { name: 'array of text', value: ['a'] },
  { name: 'empty array', value: [] },
  { name: 'object', value: { a: 1 } },
  { name: 'null', value: null },
  { name: 'boolean', value: true },
];
/** Whole bodies besides the values above (raw JSON text): odd field names, nesting deeper than any stack. */
const BODY_ONLY: { name: string; raw: string }[] = [
  { name: 'field named NUL', raw: JSON.stringify({ '\u0000': 1 }) },
  { name: 'field name with lone surrogate', raw: JSON.stringify({ 'name\ud800': 'x' }) },
  { name: 'arrays nested 100,000 deep', raw: '['.repeat(100_000) + '"\\u0000"' + ']'.repeat(100_000) },
];

/**
 * Raw (already percent-encoded) query values. A lone surrogate cannot be UTF-8 encoded: its
 * nearest wire form is the invalid UTF-8 of one (%ED%A0%80). A target over REQUEST_TARGET_MAX_BYTES
 * (8 KiB) is refused by the gateway (414) before any handler, so the huge value here is 7 KB.
 */
const QUERY_VALUES: { name: string; raw: (p: string) => string; refuse?: boolean }[] = [
  { name: 'NUL', raw: (p) => `${p}=%00`, refuse: true },
  { name: 'text with NUL', raw: (p) => `${p}=a%00b`, refuse: true },
  { name: 'encoded surrogate', raw: (p) => `${p}=%ED%A0%80` },
  { name: 'invalid UTF-8', raw: (p) => `${p}=%FF%FE` },
  { name: '20 digits', raw: (p) => `${p}=12345678901234567890` },
  { name: '2^31', raw: (p) => `${p}=2147483648` },
  { name: 'negative', raw: (p) => `${p}=-1` },
  { name: 'float', raw: (p) => `${p}=1.5` },
  { name: 'exponent', raw: (p) => `${p}=1e3` },
  { name: 'zero', raw: (p) => `${p}=0` },
  { name: 'empty', raw: (p) => `${p}=` },
  { name: 'null', raw: (p) => `${p}=null` },
  { name: '7 KB', raw: (p) => `${p}=${'y'.repeat(7 * 1024)}` },
  { name: 'repeated', raw: (p) => `${p}=a&${p}=b` },
  { name: 'array form', raw: (p) => `${p}%5B%5D=a` },
  { name: 'object form', raw: (p) => `${p}%5Bk%5D=a` },
  { name: 'quotes and angle brackets', raw: (p) => `${p}=%27%22%3C%3E%3B--` },
];

/** Path segments (raw, as sent) in place of each path parameter. */
const PATH_VALUES = [
  '2147483648',
  '12345678901234567890',
  '9999999999999999',
  '-1',
  '0',
  '1.5',
  '1e3',
  '01',
  'abc',
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%FF',
  'z'.repeat(8 * 1024),
];

// ---------------------------------------------------------------- keys and cases

/** Requests of one batch run together, each with a key of its own, in a fresh rate-limit window. */
const POOL = 24;
const secret = (prefix: string, tag: string, i: number) =>
  `${prefix}${tag}${String(i).padStart(4, '0')}`.padEnd(prefix.length + 36, '0');
const pool = (prefix: string, tag: string) => Array.from({ length: POOL }, (_, i) => secret(prefix, tag, i));
const WS_KEYS = pool('svc_ws_', 'HostileWs');
const OWNER_KEYS = pool('svc_pk_', 'HostileOwner');
const PARTNER_KEYS = pool('svc_v1_', 'HostilePartner');
const EXTRA_KEYS = [
  ...WS_KEYS.map((s, i) => ({
    id: 7000 + i,
    secret: s,
    name: `hostile ws ${i}`,
    workspaceId: 100,
    role: 'ADMIN',
    scopes: ALL_SCOPES,
    createdBy: 10,
  })),
  ...OWNER_KEYS.map((s, i) => ({
    id: 7100 + i,
    secret: s,
    name: `hostile owner ${i}`,
    userId: 10,
    scopes: ALL_SCOPES,
  })),
  ...PARTNER_KEYS.map((s, i) => ({ id: 7200 + i, secret: s, name: `hostile partner ${i}`, organizationId: 1 })),
];

interface Case {
  what: string;
  method: string;
  url: string;
  body?: string;
  /** The field a 400 invalid_request must name, when the value is one PostgreSQL cannot hold. */
  refuse?: string;
  /** A hostile workspace id in the path: the gateway's step 8 answers 150004 in Envelope A. */
  workspacePath?: boolean;
}

const routeKey = (r: RouteRow) => `${r.method} ${r.path}`;
const concrete = (path: string) => concretePath(path, (name) => VALID_PARAM[`{${name}}`]);
const validQuery = (shape: Shape, except?: string) =>
  (shape.query ?? []).filter((p) => p !== except && VALID_QUERY[p]).map((p) => `${p}=${VALID_QUERY[p]}`);
const withQuery = (path: string, parts: string[]) => (parts.length ? `${path}?${parts.join('&')}` : path);

/** Every field path of a JSON value: object keys and the first element of each array. */
function fieldPaths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v)) return v.length ? [[...at, 0], ...fieldPaths(v[0], [...at, 0])] : [];
  if (v && typeof v === 'object')
    return Object.entries(v).flatMap(([k, x]) => [[...at, k], ...fieldPaths(x, [...at, k])]);
  return [];
}

function replaced(base: unknown, path: (string | number)[], value: unknown): unknown {
  if (!path.length) return value;
  const copy: any = Array.isArray(base) ? [...base] : { ...(base as object) };
  copy[path[0]] = replaced(copy[path[0]], path.slice(1), value);
  return copy;
}

function casesOf(r: RouteRow): Case[] {
  const shape = SHAPES[routeKey(r)];
  const base = shape.bodies?.[0];
  const baseBody = base === undefined ? undefined : JSON.stringify(base);
  const url = withQuery(concrete(r.path), validQuery(shape));
  const out: Case[] = [];
  for (const m of r.path.matchAll(/\{[A-Za-z]+(:str)?\}/g)) {
    for (const seg of PATH_VALUES) {
      const path = r.path.replace(m[0], seg);
      out.push({
        what: `path ${m[0]} = ${seg.slice(0, 24)}`,
        method: r.method,
        url: withQuery(concrete(path), validQuery(shape)),
        body: baseBody,
        workspacePath: m[0] === '{workspaceId}' && r.path.startsWith('/v2/'),
      });
    }
  }
  for (const p of [...(shape.query ?? []), 'undocumented']) {
    for (const q of QUERY_VALUES) {
      out.push({
        what: `query ${p}: ${q.name}`,
        method: r.method,
        url: withQuery(concrete(r.path), [...validQuery(shape, p), q.raw(p)]),
        body: baseBody,
        refuse: q.refuse && p !== 'undocumented' ? p : undefined,
      });
    }
  }
  if (r.method !== 'GET' && r.method !== 'DELETE') {
    for (const v of BODY_VALUES)
      out.push({ what: `body: ${v.name}`, method: r.method, url, body: JSON.stringify(v.value) });
    for (const v of BODY_ONLY) out.push({ what: `body: ${v.name}`, method: r.method, url, body: v.raw });
    for (const b of shape.bodies ?? []) {
      for (const fp of fieldPaths(b)) {
        for (const v of BODY_VALUES) {
          const field = fp.join('.');
          out.push({
            what: `body ${field}: ${v.name}`,
            method: r.method,
            url,
            body: JSON.stringify(replaced(b, fp, v.value)),
            refuse: v.refuse ? field : undefined,
          });
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- the stack

const clock = new FakeClock();
let s: Stack;
let world: OutsideWorld;
let batch = 0;

beforeAll(async () => {
  // DNS, the providers' directories (unknown tenants: 404) and a token profile lookup that refuses every
  // token (so no valid-looking token leaves the machine), all faked on loopback.
  world = await startOutsideWorld(401);
  s = await startStack({ clock, env: world.env, extra: { apiKeys: EXTRA_KEYS } });
});
afterAll(async () => {
  await s?.close();
  await world?.close();
});

function keyFor(path: string, slot: number) {
  if (path.startsWith('/v1/')) return { apiKey: PARTNER_KEYS[slot] };
  // Provisioning and budgets need a personal key of an organization owner (docs/decisions.md section 6).
  return {
    key:
      path.startsWith('/v2/workspaces/quotas') || /^\/v2\/workspaces(\?|$)/.test(path)
        ? OWNER_KEYS[slot]
        : WS_KEYS[slot],
  };
}

async function send(c: Case, slot: number): Promise<Res> {
  return s.request(c.method, c.url, {
    ...keyFor(c.url, slot),
    ...(c.body === undefined ? {} : { body: c.body }),
    ip: `10.77.${batch % 250}.${slot + 1}`,
  });
}

/** Runs the cases POOL at a time; each batch starts a new rate-limit window (fake clock). */
async function runAll(cases: Case[]): Promise<[Case, Res][]> {
  const out: [Case, Res][] = [];
  for (let i = 0; i < cases.length; i += POOL) {
    clock.advance(60_000);
    batch++;
    const chunk = cases.slice(i, i + POOL);
    const answers = await Promise.all(chunk.map((c, slot) => send(c, slot)));
    chunk.forEach((c, j) => out.push([c, answers[j]]));
  }
  return out;
}

/** What is wrong with one answer, or null. */
function problem(c: Case, res: Res): string | null {
  const v1 = c.url.startsWith('/v1/');
  if (c.url.startsWith('/v1/email-accounts/oauth') && c.method === 'POST') {
    // The spec answers this route 501 not_implemented, whatever it is sent.
    return res.status === 501 && res.body?.error_code === 'not_implemented'
      ? null
      : `expected 501 not_implemented, got ${res.status}`;
  }
  if (res.status >= 500) return `${res.status}: ${res.text.slice(0, 300)}`;
  if (/\n\s+at /.test(res.text)) return 'a stack trace in the answer';
  if (res.status < 400) {
    return c.refuse ? `expected 400 invalid_request naming ${c.refuse}, got ${res.status}` : null;
  }
  let code: unknown;
  let field: unknown;
  if (v1) {
    const b = res.body;
    if (
      !b ||
      typeof b.error_code !== 'string' ||
      typeof b.message !== 'string' ||
      typeof b.details !== 'object' ||
      b.details === null
    ) {
      return `not the v1 error shape: ${res.text.slice(0, 200)}`;
    }
    // The request must have reached step 1 or the handler, not a key or rate-limit refusal.
    if (['unauthorized', 'rate_limit_exceeded', 'too_many_failed_attempts'].includes(b.error_code))
      return `refused by the gateway: ${b.error_code}`;
    code = b.error_code;
    field = b.details.field;
  } else if (res.body?.errorCode !== undefined) {
    if (!(c.workspacePath && res.status === 403 && res.body.errorCode === '150004' && res.body.success === false)) {
      return `Envelope A where Envelope B was due: ${res.text.slice(0, 200)}`;
    }
  } else {
    const e = res.body?.error;
    if (
      !e ||
      typeof e.code !== 'string' ||
      typeof e.message !== 'string' ||
      typeof e.details !== 'object' ||
      typeof res.body.meta?.request_id !== 'string'
    ) {
      return `not Envelope B: ${res.text.slice(0, 200)}`;
    }
    code = e.code;
    field = e.details.field;
  }
  if (
    c.refuse &&
    (res.status !== 400 ||
      code !== 'invalid_request' ||
      (field !== c.refuse && !String(field).startsWith(`${c.refuse}.`)))
  ) {
    return `expected 400 invalid_request naming ${c.refuse}, got ${res.status} ${String(code)} naming ${String(field)}`;
  }
  return null;
}

// ---------------------------------------------------------------- the tests

describe('hostile input, through the gateway', () => {
  it('every route of config/routes.json has its fields listed here (a new route must be added)', () => {
    expect(ROUTES.map(routeKey).sort()).toEqual(Object.keys(SHAPES).sort());
  });

  it.each(ROUTES.map((r) => [routeKey(r), r] as const))(
    '%s: no 5xx, every error in its own shape, unstorable values refused by name',
    async (_n, r) => {
      const results = await runAll(casesOf(r));
      const wrong = results
        .map(([c, res]) => `${c.what} -> ${problem(c, res)}`)
        .filter((line) => !line.endsWith(' -> null'));
      expect(wrong).toEqual([]);
    },
  );

  it('a 100 KB request line is refused by the HTTP parser with a 4xx, before any handler', async () => {
    const long = 'q'.repeat(100 * 1024);
    const [[, v2], [, v1]] = await runAll([
      { what: 'v2', method: 'GET', url: `/v2/workspaces/100/accounts?search=${long}` },
      { what: 'v1', method: 'GET', url: `/v1/email-accounts?search=${long}` },
    ]);
    for (const res of [v2, v1]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
  });
});

// The cases the issue reported, spelled out: each answered 500 internal_error before.
describe('the reported cases', () => {
  const one = async (method: string, url: string, body?: unknown) =>
    (await runAll([{ what: url, method, url, body: body === undefined ? undefined : JSON.stringify(body) }]))[0][1];

  it('ids beyond the integer range in bulk status, bulk tags and PUT account tags: 400 naming the field', async () => {
    const bulkStatus = await one('POST', '/v2/workspaces/100/accounts/bulk-status', { accountIds: [5000, 2147483648] });
    expect(bulkStatus.status, bulkStatus.text).toBe(400);
    expect(bulkStatus.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'accountIds.1' } });
    const bulkTags = await one('POST', '/v2/workspaces/100/accounts/bulk/tags', {
      accountIds: [5000],
      tagIds: [99999999999],
    });
    expect(bulkTags.status, bulkTags.text).toBe(400);
    expect(bulkTags.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'tagIds.0' } });
    // eslint-disable-next-line no-loss-of-precision -- a number beyond 2^53, as a client may send it
    const put = await one('PUT', '/v2/workspaces/100/accounts/5000/tags', { tagIds: [1, 12345678901234567890] });
    expect(put.status, put.text).toBe(400);
    expect(put.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'tagIds.1' } });
  });

  it('a NUL in a v2 tag name: 400 naming the field', async () => {
    const res = await one('POST', '/v2/workspaces/100/tags', { name: 'vip\u0000' });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'name' } });
  });

  it('a NUL in v1 search, in the tags filter and in tag assignment: 400 in the v1 shape', async () => {
    const search = await one('GET', '/v1/email-accounts?search=a%00');
    expect(search.status, search.text).toBe(400);
    expect(search.body).toMatchObject({ error_code: 'invalid_request', details: { field: 'search' } });
    const filter = await one('GET', '/v1/email-accounts?tags=vip&tags=%00');
    expect(filter.status, filter.text).toBe(400);
    expect(filter.body).toMatchObject({ error_code: 'invalid_request', details: { field: 'tags.1' } });
    const assign = await one('POST', '/v1/email-accounts/tags/assign', {
      emailAccountIds: [5000],
      tags: ['ok', 'bad\u0000'],
    });
    expect(assign.status, assign.text).toBe(400);
    expect(assign.body).toMatchObject({ error_code: 'invalid_request', details: { field: 'tags.1' } });
  });

  it('a path id beyond the integer range names nothing: 404 on both interfaces', async () => {
    const v2 = await one('GET', '/v2/workspaces/100/accounts/2147483648');
    expect(v2.status, v2.text).toBe(404);
    expect(v2.body.error.code).toBe('not_found');
    const v1 = await one('GET', '/v1/email-accounts/9999999999999999/status');
    expect(v1.status, v1.text).toBe(404);
    expect(v1.body.error_code).toBe('not_found');
  });

  it('each base body above is valid, so every hostile field was checked alongside valid neighbours', async () => {
    // Last, because these change data (a workspace, an account, a member are created).
    const cases: Case[] = ROUTES.flatMap((r) =>
      (SHAPES[routeKey(r)].bodies ?? []).map((b) => ({
        what: routeKey(r),
        method: r.method,
        url: withQuery(concrete(r.path), validQuery(SHAPES[routeKey(r)])),
        body: JSON.stringify(b),
      })),
    );
    const invalid = (await runAll(cases)).filter(
      ([, res]) => res.status === 400 && (res.body?.error?.code ?? res.body?.error_code) === 'invalid_request',
    );
    expect(invalid.map(([c, res]) => `${c.what}: ${res.text.slice(0, 200)}`)).toEqual([]);
  });
});

// Behind the validators: what the backend does with a database error a handler did not foresee, and
// with any other failure. A backend of routes that fail on purpose, on the test's own services.
describe('the backend behind the validators', () => {
  let backend: http.Server;
  let url: string;
  const identity = encodeIdentity({
    keyId: 7200,
    keyType: 'partner',
    organizationId: 1,
    userId: null,
    workspaceId: null,
    role: null,
    scopes: [],
    plan: 'growth',
  });
  const signed = (path: string) => {
    const ts = String(clock.now());
    return fetchRes(url + path, {
      headers: {
        'x-request-id': 'hostile-1',
        'x-gateway-identity': identity,
        'x-gateway-timestamp': ts,
        'x-gateway-signature': sign(s.gatewaySecret, ts, 'hostile-1', 'GET', path, identity),
      },
    });
  };

  beforeAll(async () => {
    const router = new Router(envelopeFor);
    for (const api of ['v1', 'v2']) {
      // Real driver errors, on pg and PGlite alike: NUL in text (22021) and an int4 overflow (22003).
      router.get(`/${api}/hostile/nul`, async (ctx) => ({
        data: await ctx.db.query('SELECT $1::text AS t', ['a\u0000b']),
      }));
      router.get(`/${api}/hostile/overflow`, async (ctx) => ({
        data: await ctx.db.query('SELECT $1::int AS n', [2147483648]),
      }));
      router.get(`/${api}/hostile/crash`, async () => {
        throw new Error('unexpected failure with a secret in its message');
      });
    }
    backend = createBackendServer(s.app.backend!, router);
    ({ url } = await listenLocal(backend));
  });
  afterAll(async () => {
    await new Promise((r) => backend?.close(r));
  });

  it.each(['nul', 'overflow'])(
    "%s: a value the database refuses is 400 invalid_request in the route's shape",
    async (what) => {
      const v2 = await signed(`/v2/hostile/${what}`);
      expect(v2.status, v2.text).toBe(400);
      expect(v2.body).toMatchObject({
        error: { code: 'invalid_request', details: {} },
        meta: { request_id: 'hostile-1' },
      });
      const v1 = await signed(`/v1/hostile/${what}`);
      expect(v1.status, v1.text).toBe(400);
      expect(v1.body).toMatchObject({ error_code: 'invalid_request', message: expect.any(String), details: {} });
    },
  );

  it("any other failure is 500 internal_error in the interface's shape, without its message or a stack", async () => {
    const v1 = await signed('/v1/hostile/crash');
    expect(v1.status).toBe(500);
    expect(v1.body).toEqual({ error_code: 'internal_error', message: 'Internal error.', details: {} });
    const v2 = await signed('/v2/hostile/crash');
    expect(v2.status).toBe(500);
    expect(v2.body).toMatchObject({
      error: { code: 'internal_error', message: 'Internal error.', details: {} },
      meta: { request_id: 'hostile-1' },
    });
    for (const r of [v1, v2]) expect(r.text).not.toMatch(/secret|\n\s+at /);
  });
});

// The backend's internal routes (docs/decisions.md section 7) share the validators: the same values, sent
// straight to the backend with a session cookie (/api-keys, Envelope A) or the internal token (Envelope B).
describe('the internal routes', () => {
  const send = (
    method: string,
    path: string,
    body: string | undefined,
    auth: { cookie: string } | { authorization: string },
  ) =>
    fetchRes(s.backendUrl + path, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body,
    });
  const session = { cookie: 'session=sess_owner_000000000000000000000001' };
  const internal = () => ({ authorization: `Bearer ${s.internalToken}` });

  const INTERNAL: { method: string; path: string; auth: 'session' | 'internal'; body?: Record<string, unknown> }[] = [
    {
      method: 'POST',
      path: '/api-keys',
      auth: 'session',
      body: { name: 'hostile', type: 'workspace', workspaceId: 100, role: 'VIEWER', scopes: ['accounts:read'] },
    },
    { method: 'DELETE', path: '/api-keys/{keyId}', auth: 'session' },
    // Organization 2: no key of the walk above belongs to it, so a valid value changes nothing it uses.
    {
      method: 'PATCH',
      path: '/internal/organizations/{organizationId}',
      auth: 'internal',
      body: {
        plan: 'free',
        apiAccess: true,
        paused: false,
        warmupCap: 100,
        partnerCallback: { url: 'http://127.0.0.1:1/refresh', verified: false },
      },
    },
    { method: 'DELETE', path: '/internal/workspaces/{workspaceId}', auth: 'internal' },
    {
      method: 'POST',
      path: '/internal/accounts/{accountId}/verification',
      auth: 'internal',
      body: { result: 'failed' },
    },
  ];
  const VALID: Record<string, string> = {
    '{keyId}': '999999',
    '{organizationId}': '2',
    '{workspaceId}': '999999',
    '{accountId}': '6000',
  };

  it.each(INTERNAL.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s: no 5xx, unstorable values refused by name',
    async (_n, r) => {
      const cases: Case[] = [];
      const url = r.path.replace(/\{[A-Za-z]+\}/g, (m) => VALID[m]);
      const body = r.body === undefined ? undefined : JSON.stringify(r.body);
      for (const m of r.path.matchAll(/\{[A-Za-z]+\}/g)) {
        for (const seg of PATH_VALUES)
          cases.push({
            what: `path ${m[0]} = ${seg.slice(0, 24)}`,
            method: r.method,
            url: r.path.replace(m[0], seg).replace(/\{[A-Za-z]+\}/g, (x) => VALID[x]),
            body,
          });
      }
      for (const fp of r.body ? fieldPaths(r.body) : []) {
        for (const v of BODY_VALUES) {
          cases.push({
            what: `body ${fp.join('.')}: ${v.name}`,
            method: r.method,
            url,
            body: JSON.stringify(replaced(r.body, fp, v.value)),
            refuse: v.refuse ? fp.join('.') : undefined,
          });
        }
      }
      const wrong: string[] = [];
      for (const c of cases) {
        const res = await send(c.method, c.url, c.body, r.auth === 'session' ? session : internal());
        const e = res.body?.error;
        const shaped =
          r.auth === 'session'
            ? res.body?.success === false && typeof res.body.errorMessage === 'string'
            : typeof e?.code === 'string' && typeof res.body.meta?.request_id === 'string';
        if (res.status >= 500 || /\n\s+at /.test(res.text))
          wrong.push(`${c.what} -> ${res.status}: ${res.text.slice(0, 200)}`);
        else if (res.status >= 400 && !shaped)
          wrong.push(`${c.what} -> not the route's shape: ${res.text.slice(0, 200)}`);
        else if (c.refuse && (res.status !== 400 || e?.code !== 'invalid_request' || e?.details?.field !== c.refuse))
          wrong.push(`${c.what} -> ${res.status} ${res.text.slice(0, 200)}`);
      }
      expect(wrong).toEqual([]);
    },
  );

  it('a session cookie that is not valid percent-encoding is an unknown session (401 150002), not a 500', async () => {
    for (const cookie of ['session=%E0%A4', 'session=%', 'session=%00']) {
      const res = await send('GET', '/api-keys', undefined, { cookie });
      expect(res.status, `${cookie}: ${res.text}`).toBe(401);
      expect(res.body.errorCode).toBe('150002');
    }
  });
});

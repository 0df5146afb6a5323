// Every decision spends exactly what the same request through keygate's proxy spends: one sequence of
// requests goes through a gateway (stack P, its own database and stores) and through /auth of two
// decision instances sharing one database and one set of stores (A and B, alternating, as a proxy's
// upstream block spreads them), on one clock. Statuses, bodies (their timestamps aside) and rate-limit
// fields are the same, request by request; an allowed decision matches the gateway's forwarded answer's
// fields. Half of the decisions are asked as nginx asks, their answers rendered by the other instance's
// /answer.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, startStack, testStores, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { createRedisStores } from '../../src/limits/redis/index.js';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import { haveRedis, testRedisClient } from '../helpers/redis.js';
import type { SharedStores } from '../../src/limits/types.js';

const clock = new FakeClock();
const env = { DECISION_PORT: '0', CORS_ORIGINS: 'https://app.example' };
const owned: SharedStores[] = [];
let p: Stack;
let a: Stack;
let b: Stack;

/** One set of counters for A and B, each on its own connection as two processes would be. */
function sharedStores(): () => SharedStores {
  if (!haveRedis()) {
    const one = createMemoryStores({ clock });
    owned.push(one);
    return () => one;
  }
  const prefix = `t${randomBytes(5).toString('hex')}:`;
  return () => {
    const st = createRedisStores({ redis: testRedisClient(), prefix, clock });
    owned.push(st);
    return st;
  };
}

beforeAll(async () => {
  const shared = sharedStores();
  const own = testStores(clock);
  owned.push(own);
  [p, a] = await Promise.all([startStack({ clock, env, stores: own }), startStack({ clock, env, stores: shared() })]);
  b = await startStack({ clock, env, db: a.db, stores: shared(), mode: 'gateway', upstreamUrl: a.backendUrl });
}, 120_000);
afterAll(async () => {
  await b?.close();
  await Promise.all([a?.close(), p?.close()]);
  for (const st of owned) await st.close();
});

interface Step {
  method: string;
  path: string;
  key?: string;
  apiKey?: string;
  ip: string;
  body?: string;
  headers?: Record<string, string>;
}

const LIMIT_FIELDS = [
  'x-request-id',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-ip-limit',
  'x-ratelimit-ip-remaining',
  'ratelimit-policy',
  'ratelimit',
  'retry-after',
  'access-control-allow-origin',
];
const ANSWER_FIELDS = [...LIMIT_FIELDS, 'content-type', 'content-length', 'vary', 'access-control-allow-methods'];

interface Seen {
  status: number;
  fields: Record<string, string | null>;
  body: unknown;
}

const pick = (h: Headers, names: string[]) => Object.fromEntries(names.map((n) => [n, h.get(n)]));
/** The body with its volatile parts (Envelope B's timestamp) taken out. */
function stable(text: string): unknown {
  if (text === '') return '';
  try {
    const v = JSON.parse(text) as { meta?: { timestamp?: string } };
    if (v.meta?.timestamp) v.meta.timestamp = '<timestamp>';
    return v;
  } catch {
    return text;
  }
}

async function throughGateway(s: Step, rid: string): Promise<Seen> {
  const headers: Record<string, string> = { 'x-request-id': rid, ...s.headers };
  if (s.key) headers.authorization = `Bearer ${s.key}`;
  if (s.apiKey) headers['x-api-key'] = s.apiKey;
  headers['x-forwarded-for'] = s.ip;
  if (s.body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(p.gatewayUrl + s.path, { method: s.method, headers, body: s.body });
  const text = await r.text();
  return { status: r.status, fields: pick(r.headers, ANSWER_FIELDS), body: stable(text) };
}

/** The same request described to `/auth` of `decider`; as nginx, its answer rendered by `renderer`. */
async function throughAuth(s: Step, rid: string, decider: Stack, renderer: Stack | null): Promise<Seen | 'allowed'> {
  const headers: Record<string, string> = { 'x-request-id': rid, ...s.headers };
  if (s.key) headers.authorization = `Bearer ${s.key}`;
  if (s.apiKey) headers['x-api-key'] = s.apiKey;
  if (s.body !== undefined) headers['content-type'] = 'application/json';
  const length = s.body === undefined ? undefined : Buffer.byteLength(s.body);
  if (renderer) {
    Object.assign(headers, { 'x-keygate-proxy': 'nginx', 'x-original-method': s.method, 'x-original-uri': s.path });
    if (length !== undefined) headers['x-original-content-length'] = String(length);
  } else {
    Object.assign(headers, { 'x-forwarded-method': s.method, 'x-forwarded-uri': s.path });
    if (length !== undefined) headers['x-forwarded-content-length'] = String(length);
  }
  headers['x-forwarded-for'] = s.ip;
  let r = await fetch(`${decider.app.decisionUrl}/auth`, { method: 'GET', headers });
  // Allowed: 200 with the signed identity. A 200 without it is keygate's own answer (the status route).
  if (r.status === 200 && r.headers.get('x-gateway-signature') !== null) {
    expect(await r.text()).toBe('');
    lastAllowed = pick(r.headers, LIMIT_FIELDS);
    return 'allowed';
  }
  if (renderer) {
    expect(r.status).toBe(401);
    const token = r.headers.get('x-keygate-answer');
    expect(token).toBeTruthy();
    r = await fetch(`${renderer.app.decisionUrl}/answer`, { headers: { 'x-keygate-answer': token! } });
  }
  const text = await r.text();
  return { status: r.status, fields: pick(r.headers, ANSWER_FIELDS), body: stable(text) };
}
let lastAllowed: Record<string, string | null> = {};

const tags = '/v2/workspaces/100/tags';
const sequence: Step[] = [
  { method: 'GET', path: '/v2/workspaces/100/accounts', ip: '10.60.0.1' },
  ...Array.from({ length: 6 }, () => ({
    method: 'GET',
    path: tags,
    key: 'svc_ws_' + 'Bogus'.padEnd(36, '0'),
    ip: '10.60.0.2',
  })),
  ...Array.from({ length: 21 }, (_, i) => ({
    method: 'GET',
    path: `${tags}?page=${i}`,
    key: K.wsAdmin,
    ip: '10.60.0.3',
  })),
  { method: 'POST', path: tags, key: K.editorPk, ip: '10.60.0.3', body: JSON.stringify({ name: 'exact' }) },
  // Over BODY_LIMIT_BYTES (1 MiB): refused on its declared size before anything is spent on the key.
  { method: 'POST', path: tags, key: K.editorPk, ip: '10.60.0.3', body: JSON.stringify({ name: 'x'.repeat(1 << 20) }) },
  { method: 'DELETE', path: `${tags}/1`, key: K.wsViewer, ip: '10.60.0.4' },
  { method: 'GET', path: '/v2/workspaces/100/rate-limit', key: K.editorPk, ip: '10.60.0.4' },
  { method: 'GET', path: '/v2/workspaces/101/tags', key: K.wsAdmin, ip: '10.60.0.4' },
  { method: 'GET', path: '/v2/workspaces/100//tags', key: K.editorPk, ip: '10.60.0.4' },
  { method: 'GET', path: '/v2/workspaces/100/nothing-here', key: K.editorPk, ip: '10.60.0.4' },
  { method: 'GET', path: '/v2/workspaces/300/tags', key: K.org3Ws, ip: '10.60.0.5' },
  { method: 'GET', path: '/v1/email-accounts', apiKey: K.partner, ip: '10.60.0.6' },
  { method: 'GET', path: '/v1/email-accounts', apiKey: 'svc_v1_' + 'Nobody'.padEnd(36, '0'), ip: '10.60.0.6' },
  { method: 'GET', path: '/v1/rate-limit', apiKey: K.partner, ip: '10.60.0.6' },
  { method: 'GET', path: '/v2/openapi.json', ip: '10.60.0.7' },
  {
    method: 'OPTIONS',
    path: tags,
    ip: '10.60.0.7',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
  },
  { method: 'GET', path: tags, key: K.editorPk, ip: '10.60.0.7', headers: { origin: 'https://app.example' } },
  // Organization 2 is on the free plan: its reads run out within the sequence.
  ...Array.from({ length: 8 }, () => ({
    method: 'GET',
    path: '/v2/workspaces/200/tags',
    key: K.org2Ws,
    ip: '10.60.0.8',
  })),
];

describe('a decision spends what the gateway spends', () => {
  it('the same sequence: same statuses, bodies and rate-limit fields, across two decision instances', async () => {
    clock.setSecond(5);
    let allowed = 0;
    for (const [i, step] of sequence.entries()) {
      const rid = `exact-${i}`;
      const g = await throughGateway(step, rid);
      // Alternate the instances; every other request as nginx, its answer rendered by the other one.
      const [decider, other] = i % 2 === 0 ? [a, b] : [b, a];
      const nginx = step.path !== '/v2/openapi.json' && i % 4 < 2;
      const d = await throughAuth(step, rid, decider, nginx ? other : null);
      const what = `${i}: ${step.method} ${step.path}`;
      if (d === 'allowed') {
        allowed++;
        expect(g.status, what).toBeGreaterThanOrEqual(200);
        expect(g.status, what).toBeLessThan(300);
        expect(lastAllowed, what).toEqual(Object.fromEntries(LIMIT_FIELDS.map((n) => [n, g.fields[n]])));
      } else {
        expect(d, what).toEqual(g);
      }
    }
    // The sequence both admits and refuses: neither side agreed by answering everything alike.
    expect(allowed).toBeGreaterThan(20);
    expect(allowed).toBeLessThan(sequence.length - 10);
  });
});

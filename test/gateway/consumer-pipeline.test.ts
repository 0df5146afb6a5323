// The pipeline under a rest profile (docs/profiles.md): a consumer's key read from the profile's field,
// refusals as RFC 9457 problem details with the profile's types and codes, the key's bucket, the address
// layer and the monthly quota exact, the status route, the fields of the profile's families, and what the
// upstream is told (the signed identity, never the key). Keys are written straight into the tables, so
// this file tests the gateway alone.
import http from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { listenLocal } from '../helpers/listen.js';
import { insertConsumerKey } from '../helpers/keys.js';
import { verifyHmacHeaders } from '../../src/verifier/index.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

async function recordingUpstream() {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true }));
    });
  });
  const { url } = await listenLocal(server);
  return { seen, url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function profileFile(upstream: string, o: { header: string; identity: string; address: string; headers: string }) {
  const dir = mkdtempSync(join(tmpdir(), 'kg-consumer-'));
  const file = join(dir, 'profile.yaml');
  writeFileSync(
    file,
    `version: 1
name: shop
kind: rest
prefix: /api
key:
  header: ${o.header}
  types:
    - { name: consumer, prefix: shop_ }
scopes: [orders:read, orders:write]
plans:
  free: { read: 3, write: 2, bulk: 1 }
  metered: { read: 100, write: 100, bulk: 100, monthlyQuota: 4 }
limits:
  address: ${o.address}
  headers: ${o.headers}
services:
  orders: { targets: ['${upstream}'] }
routes:
  - { method: GET, path: /api/orders, scope: orders:read, bucket: read, service: orders }
  - { method: POST, path: /api/orders, scope: orders:write, bucket: write, service: orders }
  - { method: GET, path: /api/rate-limit, scope: null, bucket: read, gateway: true }
errors:
  typeBase: https://shop.example/problems/
  refusals:
    insufficient_scope: { status: 403, code: missing-scope, title: The key may not call this route. }
identity: ${o.identity}
`,
  );
  return file;
}

/** A consumer (an organization without workspaces) and one key of it, written into the tables. */
async function consumerKey(stack: Stack, tag: string, plan: string, scopes: string[]): Promise<string> {
  return (await insertConsumerKey(stack.db, { tag, plan, scopes })).secret;
}

const PROBLEM = 'application/problem+json';

type ProfileOptions = Parameters<typeof profileFile>[1];

/** A stack under a profile of these options in front of a recording upstream, for one describe block. */
function profileStack(o: ProfileOptions) {
  const t = { clock: new FakeClock() } as {
    clock: FakeClock;
    stack: Stack;
    upstream: Awaited<ReturnType<typeof recordingUpstream>>;
  };
  t.clock.setSecond(5);
  beforeAll(async () => {
    t.upstream = await recordingUpstream();
    // No seed: the workspace API's demo keys are not keys of this profile.
    t.stack = await startStack({ clock: t.clock, seed: {}, env: { PROFILE_FILE: profileFile(t.upstream.url, o) } });
  });
  afterAll(async () => {
    await t.stack?.close();
    await t.upstream?.close();
  });
  return t;
}

describe('a rest profile with Bearer keys, an address layer and both header families', () => {
  const t = profileStack({
    header: 'authorization',
    identity: 'keygate',
    address: '5',
    headers: '[x-ratelimit, ietf]',
  });

  it('a request without a key: 401 problem details, the address layer shown and not spent', async () => {
    const r = await t.stack.request('GET', '/api/orders', { ip: '198.51.100.1' });
    expect(r.status).toBe(401);
    expect(r.headers.get('content-type')).toBe(PROBLEM);
    expect(r.body).toEqual({
      type: 'https://shop.example/problems/missing-key',
      title: 'An API key is required.',
      status: 401,
      detail: 'Send the API key as Authorization: Bearer <key>.',
      code: 'missing-key',
      request_id: r.headers.get('x-request-id'),
    });
    expect(r.headers.get('x-ratelimit-ip-limit')).toBe('5');
    expect(r.headers.get('x-ratelimit-ip-remaining')).toBe('5');
    expect(r.headers.get('ratelimit-policy')).toBe('"ip";q=5;w=60');
    expect(r.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it("a key of another API's prefix is an invalid key", async () => {
    const r = await t.stack.request('GET', '/api/orders', { key: 'svc_ws_' + 'a'.repeat(40), ip: '198.51.100.2' });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('invalid-key');
    expect(r.body.type).toBe('https://shop.example/problems/invalid-key');
  });

  it("a key without the route's scope: 403 with the profile's own code, its bucket read and not spent", async () => {
    const key = await consumerKey(t.stack, 'readonly', 'free', ['orders:read']);
    const r = await t.stack.request('POST', '/api/orders', { key, ip: '198.51.100.3', body: {} });
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toBe(PROBLEM);
    expect(r.body).toMatchObject({
      type: 'https://shop.example/problems/missing-scope',
      title: 'The key may not call this route.',
      status: 403,
      code: 'missing-scope',
    });
    expect(r.headers.get('x-ratelimit-limit')).toBe('2');
    expect(r.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(t.upstream.seen).toHaveLength(0);
  });

  it('admitted: the upstream gets the signed identity of the consumer key and never the key', async () => {
    const key = await consumerKey(t.stack, 'reader', 'free', ['orders:read', 'orders:write']);
    const r = await t.stack.request('GET', '/api/orders?page=2', { key, ip: '198.51.100.4' });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ratelimit-limit')).toBe('3');
    expect(r.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(r.headers.get('x-ratelimit-ip-remaining')).toBe('4');
    expect(r.headers.get('ratelimit-policy')).toBe('"read";q=3;w=60, "ip";q=5;w=60');
    expect(r.headers.get('ratelimit')).toBe('"read";r=2;t=55, "ip";r=4;t=55');
    const got = t.upstream.seen.at(-1)!;
    expect(got.url).toBe('/api/orders?page=2');
    expect(got.headers.authorization).toBeUndefined();
    expect(JSON.stringify(got.headers)).not.toContain(key);
    const signed = verifyHmacHeaders(
      t.stack.gatewaySecret,
      { method: 'GET', target: '/api/orders?page=2', headers: got.headers },
      { now: () => t.clock.now() },
    );
    expect(signed.identity).toMatchObject({ keyType: 'consumer', scopes: ['orders:read', 'orders:write'] });
    expect(signed.identity.workspaceId).toBeNull();
  });

  it("the key's bucket is exact: its budget admitted, the next refused with Retry-After", async () => {
    const key = await consumerKey(t.stack, 'burst', 'free', ['orders:write']);
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push(await t.stack.request('POST', '/api/orders', { key, ip: '198.51.100.5', body: {} }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    const refused = answers[2];
    expect(refused.headers.get('content-type')).toBe(PROBLEM);
    expect(refused.body).toMatchObject({
      code: 'rate-limited',
      status: 429,
      detail: 'Rate limit exceeded for the Write bucket.',
      retry_after: 55,
    });
    expect(refused.headers.get('retry-after')).toBe('55');
  });

  it('the address layer counts every key of one address', async () => {
    const a = await consumerKey(t.stack, 'addressA', 'metered', ['orders:read']);
    const b = await consumerKey(t.stack, 'addressB', 'metered', ['orders:read']);
    const statuses = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await t.stack.request('GET', '/api/orders', { key: i % 2 ? a : b, ip: '198.51.100.6' })).status);
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    const last = await t.stack.request('GET', '/api/orders', { key: a, ip: '198.51.100.6' });
    expect(statuses[4]).toBe(200);
    expect(statuses[5]).toBe(429);
    expect(last.body.detail).toBe('Rate limit exceeded for IP address 198.51.100.6.');
  });

  it('the monthly quota: its requests admitted, then quota-exhausted until the month turns', async () => {
    const key = await consumerKey(t.stack, 'monthly', 'metered', ['orders:read']);
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      const r = await t.stack.request('GET', '/api/orders', { key, ip: `198.51.100.${20 + i}` });
      statuses.push(r.status);
      expect(r.headers.get('ratelimit-policy')).toMatch(/, "month";q=4;w=\d+$/);
    }
    expect(statuses).toEqual([200, 200, 200, 200]);
    const over = await t.stack.request('GET', '/api/orders', { key, ip: '198.51.100.30' });
    expect(over.status).toBe(429);
    expect(over.body.code).toBe('quota-exhausted');
    expect(over.body.type).toBe('https://shop.example/problems/quota-exhausted');
  });

  it("the status route answers the key's layers without spending, and the API description is served", async () => {
    const key = await consumerKey(t.stack, 'status', 'free', []);
    const s1 = await t.stack.request('GET', '/api/rate-limit', { key, ip: '198.51.100.40' });
    const s2 = await t.stack.request('GET', '/api/rate-limit', { key, ip: '198.51.100.40' });
    expect(s1.status).toBe(200);
    expect(s2.body).toEqual(s1.body);
    expect(s1.body).toMatchObject({
      plan: 'free',
      windowSeconds: 60,
      buckets: { read: { limit: 3, used: 0, remaining: 3 }, write: { limit: 2 }, bulk: { limit: 1 } },
      ip: { limit: 5, used: 0 },
    });
    const doc = await t.stack.request('GET', '/api/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toMatch(/^3\./);
  });

  it("a path outside the profile's prefix is a not-found problem", async () => {
    const r = await t.stack.request('GET', '/v2/workspaces', { ip: '198.51.100.50' });
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toBe(PROBLEM);
    expect(r.body.code).toBe('not-found');
  });
});

describe('a rest profile with its own key field, no address layer, IETF fields only and no identity', () => {
  const t = profileStack({
    header: 'x-shop-key',
    identity: 'none',
    address: 'null',
    headers: '[ietf]',
  });

  it('a request without the field names it; no fields of a layer it did not reach', async () => {
    const r = await t.stack.request('GET', '/api/orders', { ip: '203.0.113.1' });
    expect(r.status).toBe(401);
    expect(r.body.detail).toBe('Missing X-Shop-Key header.');
    expect(r.headers.get('ratelimit-policy')).toBeNull();
    expect(r.headers.get('x-ratelimit-ip-limit')).toBeNull();
  });

  it('admitted: only the IETF fields, no address policy, and the upstream gets neither key nor identity', async () => {
    const key = await consumerKey(t.stack, 'field', 'free', ['orders:read']);
    const r = await t.stack.request('GET', '/api/orders', { headers: { 'x-shop-key': key }, ip: '203.0.113.2' });
    expect(r.status).toBe(200);
    expect(r.headers.get('ratelimit-policy')).toBe('"read";q=3;w=60');
    expect(r.headers.get('x-ratelimit-limit')).toBeNull();
    const got = t.upstream.seen.at(-1)!;
    expect(got.headers['x-shop-key']).toBeUndefined();
    expect(got.headers['x-gateway-identity']).toBeUndefined();
    expect(got.headers['x-gateway-signature']).toBeUndefined();
  });
});

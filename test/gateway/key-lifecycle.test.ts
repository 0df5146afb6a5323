// Keys over time through the real gateway (issue 22 items 1, 2 and 4), on the shared Redis and
// PostgreSQL when they are set: expiry at its exact instant by an injected clock (a principal cached
// before the instant is refused from the first request at or after it, and the refusal counts as a
// failed authentication), rotation with a grace period, two instances seeing both on the very next
// request, and metadata inside the signed identity (HMAC headers and the JWT's kg claim alike).
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { createRedisStores } from '../../src/limits/redis/index.js';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import { haveRedis, testRedisClient } from '../helpers/redis.js';
import type { SharedStores } from '../../src/limits/types.js';
import { createJwtVerifier, verifyHmacIdentity } from '../../src/verifier/index.js';
import { listenLocal } from '../helpers/listen.js';

const clock = new FakeClock();
let a: Stack;
let b: Stack;
const extra: SharedStores[] = [];
let ipN = 0;
const ip = () => `10.88.${Math.floor(++ipN / 250)}.${ipN % 250}`;

function sharedStores(prefix: string): () => SharedStores {
  if (!haveRedis()) {
    const one = createMemoryStores({ clock });
    return () => one;
  }
  return () => {
    const st = createRedisStores({ redis: testRedisClient(), prefix, clock });
    extra.push(st);
    return st;
  };
}

beforeAll(async () => {
  const stores = sharedStores(`t${randomBytes(4).toString('hex')}:`);
  a = await startStack({ clock, stores: stores() });
  b = await startStack({ clock, db: a.db, stores: stores(), mode: 'gateway', upstreamUrl: a.backendUrl });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
  for (const st of extra) await st.close();
});

/** A personal key of the owner (user 10) through /api-keys; the secret is answered once. */
async function mint(body: Record<string, unknown> = {}): Promise<{ id: number; secret: string }> {
  const r = await a.session('POST', '/api-keys', K.session, {
    name: 'lifecycle',
    type: 'personal',
    scopes: ['workspace:read'],
    ...body,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { id: r.body.data.id, secret: r.body.data.secret };
}
const get = (s: Stack, key: string, from = ip()) => s.request('GET', '/v2/workspaces/100', { key, ip: from });

describe('expiry', () => {
  it('the cached principal is refused from the first request at or after expiresAt, as 150002', async () => {
    const expiresAt = clock.now() + 10_000;
    const { secret } = await mint({ expiresAt: new Date(expiresAt).toISOString() });
    expect((await get(a, secret)).status).toBe(200); // resolved and cached
    clock.t = expiresAt - 1;
    const hits = a.app.cache!.hits;
    expect((await get(a, secret)).status).toBe(200);
    expect(a.app.cache!.hits).toBe(hits + 1); // served from the cache, one millisecond before
    clock.t = expiresAt;
    const r = await get(a, secret);
    expect(r.status).toBe(401);
    expect(r.body.errorCode).toBe('150002');
    expect(r.headers.get('x-ratelimit-limit')).toBeNull(); // no key resolved: no key bucket headers
  });

  it('counts as a failed authentication: the 6th try from one address is in the cooldown (150006)', async () => {
    const { secret } = await mint({ expiresAt: new Date(clock.now() + 1000).toISOString() });
    clock.advance(1000);
    const from = ip();
    for (let i = 0; i < 5; i++) expect((await get(a, secret, from)).body.errorCode).toBe('150002');
    const sixth = await get(a, secret, from);
    expect(sixth.status).toBe(429);
    expect(sixth.body.errorCode).toBe('150006');
  });

  it('/v1: an expired partner key gets the v1 401 shape', async () => {
    const r = await a.session('POST', '/api-keys', K.session, {
      name: 'p',
      type: 'partner',
      expiresAt: new Date(clock.now() + 5000).toISOString(),
    });
    const secret = r.body.data.secret;
    expect((await a.request('GET', '/v1/rate-limit', { apiKey: secret, ip: ip() })).status).toBe(200);
    clock.advance(5000);
    const v1 = await a.request('GET', '/v1/rate-limit', { apiKey: secret, ip: ip() });
    expect(v1.status).toBe(401);
    expect(v1.body).toMatchObject({ error_code: 'unauthorized' });
  });

  it('an expiry moved later, or cleared, takes effect on the next request; the list says expired meanwhile', async () => {
    const { id, secret } = await mint({ expiresAt: new Date(clock.now() + 1000).toISOString() });
    expect((await get(a, secret)).status).toBe(200);
    clock.advance(1000);
    expect((await get(a, secret)).status).toBe(401);
    const listed = (await a.session('GET', '/api-keys?status=expired', K.session)).body.data.find(
      (k: { id: number }) => k.id === id,
    );
    expect(listed).toMatchObject({ status: 'expired', expiresAt: new Date(clock.now()).toISOString() });
    const cleared = await a.session('PATCH', `/api-keys/${id}`, K.session, { expiresAt: null });
    expect(cleared.body.data).toMatchObject({ status: 'active', expiresAt: null });
    expect((await get(a, secret)).status).toBe(200);
    expect((await get(b, secret)).status).toBe(200);
  });

  it("two instances: an expiry set through a's backend is refused by b on the very next request", async () => {
    const { id, secret } = await mint();
    expect((await get(b, secret)).status).toBe(200);
    expect((await get(b, secret)).status).toBe(200); // cached on b
    const r = await a.session('PATCH', `/api-keys/${id}`, K.session, {
      expiresAt: new Date(clock.now()).toISOString(),
    });
    expect(r.status).toBe(200);
    expect((await get(b, secret)).status).toBe(401);
    expect((await get(a, secret)).status).toBe(401);
  });
});

describe('rotation', () => {
  it('the old secret works until the grace period ends, then 150002; the new one from the start', async () => {
    const { id, secret: old } = await mint();
    expect((await get(a, old)).status).toBe(200);
    const r = await a.session('POST', `/api-keys/${id}/rotate`, K.session, { graceSeconds: 30 });
    expect(r.status).toBe(200);
    const fresh: string = r.body.data.secret;
    expect(fresh).toMatch(/^svc_pk_[A-Za-z0-9]{40}$/);
    expect(r.body.data).toMatchObject({
      id,
      scopes: ['workspace:read'],
      previousSecret: { expiresAt: new Date(clock.now() + 30_000).toISOString() },
    });
    expect((await get(a, old)).status).toBe(200);
    expect((await get(b, fresh)).status).toBe(200);
    clock.advance(29_999);
    expect((await get(a, old)).status).toBe(200);
    clock.advance(1);
    expect((await get(a, old)).body.errorCode).toBe('150002');
    expect((await get(b, old)).body.errorCode).toBe('150002');
    expect((await get(a, fresh)).status).toBe(200);
    // The new secret is never shown again.
    expect(JSON.stringify((await a.session('GET', `/api-keys/${id}`, K.session)).body)).not.toContain(fresh.slice(7));
  });

  it('rotating again during a grace period ends the previous old secret at once (two secrets at most)', async () => {
    const { id, secret: first } = await mint();
    const second = (await a.session('POST', `/api-keys/${id}/rotate`, K.session, {})).body.data.secret; // default grace: 24 h
    clock.advance(3_600_000);
    expect((await get(a, first)).status).toBe(200);
    const third = (await a.session('POST', `/api-keys/${id}/rotate`, K.session, { graceSeconds: 60 })).body.data.secret;
    expect((await get(b, first)).body.errorCode).toBe('150002');
    expect((await get(b, second)).status).toBe(200);
    expect((await get(a, third)).status).toBe(200);
  });

  it('grace 0: the old secret stops at once on both instances', async () => {
    const { id, secret: old } = await mint();
    expect((await get(b, old)).status).toBe(200);
    const r = await a.session('POST', `/api-keys/${id}/rotate`, K.session, { graceSeconds: 0 });
    expect(r.body.data.previousSecret).toBeNull();
    expect((await get(b, old)).status).toBe(401);
    expect((await get(b, r.body.data.secret)).status).toBe(200);
  });
});

describe('metadata in the signed identity', () => {
  let upstream: http.Server;
  let seen: { method: string; url: string; headers: http.IncomingHttpHeaders }[] = [];
  let c: Stack;

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{}}');
    });
    const { url: upstreamUrl } = await listenLocal(upstream);
    c = await startStack({
      clock,
      upstreamOverride: upstreamUrl,
      env: { IDENTITY_FORMAT: 'both', IDENTITY_JWT_AUDIENCE: 'lifecycle-svc' },
    });
  });
  afterAll(async () => {
    await c?.close();
    await new Promise((r) => upstream.close(r));
  });

  it("the upstream receives the key's metadata in the HMAC identity and the JWT kg claim; a key without has no field", async () => {
    const metadata = { customerId: 'cus_42', tier: 'gold', limits: { seats: 5 } };
    const made = await c.session('POST', '/api-keys', K.session, {
      name: 'meta',
      type: 'personal',
      scopes: ['workspace:read'],
      metadata,
    });
    expect(made.body.data.metadata).toEqual(metadata);
    seen = [];
    expect((await c.request('GET', '/v2/workspaces/100', { key: made.body.data.secret, ip: ip() })).status).toBe(200);
    expect((await c.request('GET', '/v2/workspaces/100', { key: K.ownerPk, ip: ip() })).status).toBe(200);
    expect(seen).toHaveLength(2);
    const jwks = await (await fetch(`${c.adminUrl}/.well-known/jwks.json`)).json();
    const jwt = createJwtVerifier({ jwks, audience: 'lifecycle-svc', now: () => clock.now() });
    const [withMeta, without] = await Promise.all(
      seen.map(async (s) => ({
        hmac: await verifyHmacIdentity(
          c.gatewaySecret,
          { method: s.method, target: s.url, headers: s.headers },
          { now: () => clock.now() },
        ),
        jwt: await jwt(s.headers, { method: s.method, target: s.url }),
      })),
    );
    expect(withMeta.hmac.metadata).toEqual(metadata);
    expect(withMeta.jwt.metadata).toEqual(metadata);
    expect('metadata' in without.hmac).toBe(false);
    expect('metadata' in without.jwt).toBe(false);

    // A change of metadata reaches the very next request.
    await c.session('PATCH', `/api-keys/${made.body.data.id}`, K.session, { metadata: { tier: 'platinum' } });
    seen = [];
    await c.request('GET', '/v2/workspaces/100', { key: made.body.data.secret, ip: ip() });
    const next = await verifyHmacIdentity(
      c.gatewaySecret,
      { method: seen[0].method, target: seen[0].url, headers: seen[0].headers },
      { now: () => clock.now() },
    );
    expect(next.metadata).toEqual({ tier: 'platinum' });
  });

  it('metadata over 1 KiB, or not an object, is refused with the field named', async () => {
    const big = await c.session('POST', '/api-keys', K.session, {
      name: 'm',
      type: 'personal',
      metadata: { blob: 'x'.repeat(1020) },
    });
    expect(big.status).toBe(400);
    expect(big.body.errorMessage).toMatch(/metadata is \d+ bytes as JSON; at most 1024/);
    const arr = await c.session('POST', '/api-keys', K.session, { name: 'm', type: 'personal', metadata: [1, 2] });
    expect(arr.status).toBe(400);
  });
});

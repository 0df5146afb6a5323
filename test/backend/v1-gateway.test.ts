// The gateway side of /v1 (docs/decisions.md section 4), end to end: X-Api-Key, 20 per key per fixed minute
// then 429 rate_limit_exceeded with Retry-After, GET /v1/rate-limit spends nothing, v1 and v2
// limits are independent, invalid keys feed the per-IP cooldown, organization refusals, and the
// backend's /v1 routes match config/routes.json.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, fetchRes, startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { buildRouter } from '../../src/backend/server.js';

// 15 seconds into a minute: the window resets in 45 s.
const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 15));
const P2 = 'svc_v1_' + 'Partner00000000000000000000000000002';
const P3 = 'svc_v1_' + 'Org3Partner00000000000000000000000001';
const P5 = 'svc_v1_' + 'Org5Partner00000000000000000000000001';
const UNKNOWN = 'svc_v1_' + 'Unknown00000000000000000000000000001';
let s: Stack;

beforeAll(async () => {
  s = await startStack({
    clock,
    extra: {
      organizations: [{ id: 5, name: 'Paused', plan: 'growth', apiAccess: true, paused: true, warmupCap: null }],
      apiKeys: [
        { id: 1021, secret: P2, name: 'partner 2', organizationId: 1 },
        { id: 3001, secret: P3, name: 'gamma partner', organizationId: 3 },
        { id: 5001, secret: P5, name: 'paused partner', organizationId: 5 },
      ],
    },
  });
});
afterAll(async () => s?.close());

const nextMinute = () => clock.advance(60_000);
const windowEnd = () => Math.floor((clock.now() - (clock.now() % 60_000) + 60_000) / 1000);

describe('20 requests per key per minute', () => {
  it('counts down, then answers 429 rate_limit_exceeded with Retry-After; the next window starts afresh', async () => {
    for (let i = 1; i <= 20; i++) {
      const r = await s.request('GET', '/v1/health', { apiKey: K.partner, ip: '10.44.0.1' });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('20');
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(20 - i));
      expect(r.headers.get('x-ratelimit-reset')).toBe(String(windowEnd()));
    }
    const over = await s.request('GET', '/v1/email-accounts', { apiKey: K.partner, ip: '10.44.0.1' });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({
      error_code: 'rate_limit_exceeded',
      message: expect.any(String),
      details: { limit: 20, reset: windowEnd() },
    });
    expect(over.headers.get('retry-after')).toBe('45');
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    // Every verb draws on the same single bucket.
    expect(
      (
        await s.request('POST', '/v1/email-accounts/bulk-status', {
          apiKey: K.partner,
          ip: '10.44.0.1',
          body: { emailAccountIds: [5000] },
        })
      ).status,
    ).toBe(429);
    // Another key of the same organization has its own bucket.
    expect((await s.request('GET', '/v1/health', { apiKey: P2, ip: '10.44.0.1' })).status).toBe(200);
    nextMinute();
    const fresh = await s.request('GET', '/v1/health', { apiKey: K.partner, ip: '10.44.0.1' });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('x-ratelimit-remaining')).toBe('19');
  });
});

describe('GET /v1/rate-limit', () => {
  it('reports limit, used, remaining, reset, windowSeconds and spends nothing, even when exhausted', async () => {
    nextMinute();
    const a = await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip: '10.44.0.2' });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ limit: 20, used: 0, remaining: 20, reset: windowEnd(), windowSeconds: 60 });
    for (let i = 0; i < 3; i++) await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip: '10.44.0.2' });
    await s.request('GET', '/v1/dashboard', { apiKey: K.partner, ip: '10.44.0.2' });
    const b = await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip: '10.44.0.2' });
    expect(b.body).toMatchObject({ used: 1, remaining: 19 });
    expect(b.headers.get('x-ratelimit-remaining')).toBe('19');
    for (let i = 0; i < 19; i++) await s.request('GET', '/v1/health', { apiKey: K.partner, ip: '10.44.0.2' });
    const c = await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip: '10.44.0.2' });
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ used: 20, remaining: 0 });
  });
});

describe('v1 and v2 limits are independent', () => {
  it('exhausting v2 leaves v1 whole, and exhausting v1 leaves v2 (key and IP layers) untouched', async () => {
    nextMinute();
    const ip = '10.44.0.3';
    for (let i = 0; i < 20; i++) await s.request('GET', '/v2/workspaces/100/notifications', { key: K.wsAdmin, ip });
    const v2Over = await s.request('GET', '/v2/workspaces/100/notifications', { key: K.wsAdmin, ip });
    expect(v2Over.status).toBe(429);
    expect(v2Over.body.errorCode).toBe('150005');
    expect((await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip })).body).toMatchObject({
      used: 0,
      remaining: 20,
    });
    const v2Before = (await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip })).body.data;
    expect(v2Before.buckets.read.used).toBe(21);
    for (let i = 0; i < 20; i++)
      expect((await s.request('GET', '/v1/health', { apiKey: K.partner, ip })).status).toBe(200);
    expect((await s.request('GET', '/v1/health', { apiKey: K.partner, ip })).status).toBe(429);
    const v2After = (await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip })).body.data;
    expect(v2After.buckets).toEqual(v2Before.buckets);
    expect(v2After.ip.used).toBe(v2Before.ip.used);
    // The v2 write bucket still has its budget: v1 traffic never touched it.
    expect(v2After.buckets.write.used).toBe(0);
  });
});

describe('authentication', () => {
  it('no key and unknown keys are 401 unauthorized in the v1 shape, and spend nothing', async () => {
    nextMinute();
    const none = await s.request('GET', '/v1/dashboard', { ip: '10.44.1.1' });
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error_code: 'unauthorized', message: expect.any(String), details: {} });
    expect(none.headers.get('x-ratelimit-limit')).toBe('20');
    // Every /v1 response carries the three headers; without a key, an untouched bucket of this window.
    expect(none.headers.get('x-ratelimit-remaining')).toBe('20');
    expect(none.headers.get('x-ratelimit-reset')).toBe(String(windowEnd()));
    const bad = await s.request('GET', '/v1/dashboard', { apiKey: UNKNOWN, ip: '10.44.1.2' });
    expect(bad.headers.get('x-ratelimit-remaining')).toBe('20');
    expect(bad.status).toBe(401);
    expect(bad.body.error_code).toBe('unauthorized');
    // A /v2 key is not a partner key.
    expect((await s.request('GET', '/v1/dashboard', { apiKey: K.wsAdmin, ip: '10.44.1.3' })).status).toBe(401);
    expect((await s.request('GET', '/v1/dashboard', { key: K.partner, ip: '10.44.1.4' })).status).toBe(401);
  });

  it('invalid keys count toward the per-IP cooldown: the 6th request is 429 too_many_failed_attempts', async () => {
    const ip = '10.44.2.1';
    for (let i = 0; i < 4; i++)
      expect((await s.request('GET', '/v1/dashboard', { apiKey: UNKNOWN, ip })).status).toBe(401);
    expect((await s.request('GET', '/v1/dashboard', { apiKey: 'svc_v1_short', ip })).status).toBe(401);
    const cooled = await s.request('GET', '/v1/dashboard', { apiKey: K.partner, ip });
    expect(cooled.status).toBe(429);
    expect(cooled.body).toEqual({ error_code: 'too_many_failed_attempts', message: expect.any(String), details: {} });
    expect(Number(cooled.headers.get('retry-after'))).toBe(900);
    // The same cooldown guards /v2 from that address.
    const v2 = await s.request('GET', '/v2/workspaces/100/notifications', { key: K.wsAdmin, ip });
    expect(v2.status).toBe(429);
    expect(v2.body.errorCode).toBe('150006');
    // Other addresses are unaffected; the cooldown ends after 15 minutes.
    expect((await s.request('GET', '/v1/health', { apiKey: K.partner, ip: '10.44.2.2' })).status).toBe(200);
    clock.advance(10 * 60_000);
    expect(Number((await s.request('GET', '/v1/health', { apiKey: K.partner, ip })).headers.get('retry-after'))).toBe(
      300,
    );
    clock.advance(5 * 60_000);
    expect((await s.request('GET', '/v1/health', { apiKey: K.partner, ip })).status).toBe(200);
  });

  it('a missing key is no failure', async () => {
    const ip = '10.44.3.1';
    for (let i = 0; i < 8; i++) expect((await s.request('GET', '/v1/dashboard', { ip })).status).toBe(401);
    expect((await s.request('GET', '/v1/health', { apiKey: K.partner, ip })).status).toBe(200);
  });
});

describe('organization and route refusals', () => {
  it('no API access is 403 api_access_disabled, paused is 403 subscription_paused; neither spends', async () => {
    nextMinute();
    const off = await s.request('GET', '/v1/dashboard', { apiKey: P3, ip: '10.44.4.1' });
    expect(off.status).toBe(403);
    expect(off.body.error_code).toBe('api_access_disabled');
    const paused = await s.request('POST', '/v1/email-accounts/bulk-status', {
      apiKey: P5,
      ip: '10.44.4.1',
      body: { emailAccountIds: [1] },
    });
    expect(paused.status).toBe(403);
    expect(paused.body.error_code).toBe('subscription_paused');
    expect(paused.headers.get('x-ratelimit-remaining')).toBe('20');
  });

  it('an unknown route is 404 not_found in the v1 shape and spends nothing; a non-canonical path is 400', async () => {
    const r = await s.request('GET', '/v1/nope', { apiKey: K.partner, ip: '10.44.4.2' });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error_code: 'not_found', message: expect.any(String), details: {} });
    expect(r.headers.get('x-ratelimit-remaining')).toBe('20');
    expect(
      (await s.request('GET', '/v1/email-accounts/05000/status', { apiKey: K.partner, ip: '10.44.4.2' })).status,
    ).toBe(400);
    expect((await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip: '10.44.4.2' })).body.used).toBe(0);
  });

  it('the backend refuses a /v1 request that did not come through the gateway', async () => {
    const r = await fetchRes(`${s.backendUrl}/v1/dashboard`, { headers: { 'x-api-key': K.partner } });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('unauthenticated');
  });
});

describe('route table', () => {
  it('the backend serves every /v1 route of config/routes.json (workspaces routes aside) and no other', () => {
    const table = JSON.parse(readFileSync('config/routes.json', 'utf8')) as {
      v1: { method: string; path: string; gateway?: boolean }[];
    };
    const mine = (p: string) => !p.startsWith('/v1/workspaces');
    const expected = table.v1
      .filter((r) => !r.gateway && mine(r.path))
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    const served = buildRouter(s.app.backend!)
      .routes()
      .filter((k) => k.split(' ')[1].startsWith('/v1/') && mine(k.split(' ')[1]))
      .sort();
    expect(served).toEqual(expected);
    expect(table.v1.find((r) => r.path === '/v1/rate-limit')?.gateway).toBe(true);
  });
});

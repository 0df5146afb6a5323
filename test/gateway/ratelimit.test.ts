// docs/decisions.md section 3, step 11 and "Rate-limit windows and headers", with a fake clock.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K, ALL_SCOPES } from '../fixtures/seed.js';
import { testSecret } from '../helpers/keys.js';

const big = (n: number) => testSecret('svc_ws_', `Big${n}`);
const clock = new FakeClock();
let s: Stack;
let rec: Recorder;
let ipN = 0;
const freshIp = () => `10.1.0.${++ipN}`;

beforeAll(async () => {
  rec = await startRecorder();
  s = await startStack({
    clock,
    upstreamOverride: rec.url,
    extra: {
      organizations: [{ id: 4, name: 'Big', plan: 'scale_20k', apiAccess: true, paused: false, warmupCap: null }],
      users: [{ id: 40, organizationId: 4, email: 'owner@big.test', orgRole: 'OWNER' }],
      workspaces: [{ id: 400, organizationId: 4, name: 'Big main', dailyWarmupBudget: 0 }],
      memberships: [{ workspaceId: 400, userId: 40, role: 'OWNER' }],
      apiKeys: [1, 2, 3].map((n) => ({
        id: 4000 + n,
        secret: big(n),
        name: `big ${n}`,
        workspaceId: 400,
        role: 'ADMIN',
        scopes: ALL_SCOPES,
        createdBy: 40,
      })),
    },
  });
});
afterAll(async () => {
  await s?.close();
  await rec?.close();
});
beforeEach(() => {
  clock.advance(60_000);
  clock.setSecond(15);
});

const get = (key: string, ip: string, path = '/v2/workspaces/100/accounts') => s.request('GET', path, { key, ip });
const state = async (key: string, ip: string, wid = 100) =>
  (await get(key, ip, `/v2/workspaces/${wid}/rate-limit`)).body.data;

describe('per-key layer', () => {
  it('the 21st GET of a Growth key in one minute gets 429 150005 with Retry-After = seconds left; the next minute passes', async () => {
    const ip = freshIp();
    for (let i = 1; i <= 20; i++) {
      const r = await get(K.wsAdmin, ip);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(20 - i));
    }
    const before = rec.seen.length;
    const r = await get(K.wsAdmin, ip);
    expect(r.status).toBe(429);
    expect(r.body).toEqual({
      success: false,
      data: null,
      errorCode: '150005',
      errorMessage: expect.stringContaining('Read'),
    });
    expect(r.headers.get('retry-after')).toBe('45');
    expect(r.headers.get('x-ratelimit-limit')).toBe('20');
    expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(r.headers.get('x-ratelimit-reset'))).toBe(Math.floor(clock.now() / 60_000) * 60 + 60);
    expect(r.headers.get('x-ratelimit-ip-limit')).toBe('100');
    expect(r.headers.get('x-ratelimit-ip-remaining')).toBe('79');
    expect(rec.seen.length).toBe(before); // a 429 never reaches the upstream

    clock.setSecond(59);
    clock.advance(999);
    expect((await get(K.wsAdmin, ip)).headers.get('retry-after')).toBe('1');
    clock.advance(1);
    const next = await get(K.wsAdmin, ip);
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('19');
  });

  it('buckets are separate: writes and bulk have their own counters and messages', async () => {
    const ip = freshIp();
    for (let i = 0; i < 4; i++)
      expect(
        (await s.request('POST', '/v2/workspaces/100/accounts/bulk-status', { key: K.wsAdmin, ip, body: {} })).status,
      ).toBe(200);
    const bulk = await s.request('POST', '/v2/workspaces/100/accounts/bulk/tags', { key: K.wsAdmin, ip, body: {} });
    expect(bulk.status).toBe(429);
    expect(bulk.body.errorMessage).toContain('Bulk');
    const write = await s.request('POST', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip, body: {} });
    expect(write.status).toBe(200);
    expect(write.headers.get('x-ratelimit-limit')).toBe('10');
    expect(write.headers.get('x-ratelimit-remaining')).toBe('9');
  });
});

describe('per-IP layer', () => {
  it('rejects the 101st request across three keys, naming the IP', async () => {
    const ip = freshIp();
    for (let i = 0; i < 100; i++) {
      const r = await get(big((i % 3) + 1), ip, '/v2/workspaces/400/accounts');
      expect(r.status).toBe(200);
    }
    const r = await get(big(3), ip, '/v2/workspaces/400/accounts');
    expect(r.status).toBe(429);
    expect(r.body.errorCode).toBe('150005');
    expect(r.body.errorMessage).toContain(ip);
    expect(r.headers.get('x-ratelimit-ip-remaining')).toBe('0');
    expect(Number(r.headers.get('retry-after'))).toBe(45);
    // Another address is unaffected.
    expect((await get(big(3), freshIp(), '/v2/workspaces/400/accounts')).status).toBe(200);
  });

  it('names the bucket when both layers are breached', async () => {
    const ip = freshIp();
    for (let i = 0; i < 100; i++) await get(big((i % 2) + 1), ip, '/v2/workspaces/400/accounts');
    for (let i = 0; i < 20; i++) await get(K.wsAdmin, freshIp());
    const r = await get(K.wsAdmin, ip);
    expect(r.status).toBe(429);
    expect(r.body.errorMessage).toContain('Read');
  });
});

describe('spending', () => {
  it('a rejected request lowers X-RateLimit-Remaining in both layers', async () => {
    const ip = freshIp();
    for (let i = 0; i < 20; i++) await get(K.wsAdmin, ip);
    const rejected = await get(K.wsAdmin, ip);
    expect(rejected.status).toBe(429);
    expect(rejected.headers.get('x-ratelimit-ip-remaining')).toBe('79'); // the IP layer was spent too
    const st = await state(K.wsAdmin, ip);
    expect(st.buckets.read.used).toBe(21);
    expect(st.ip.used).toBe(21);

    // Rejected by the IP layer: the key's bucket is still spent.
    const ip2 = freshIp();
    for (let i = 0; i < 100; i++) await get(big((i % 3) + 1), ip2, '/v2/workspaces/400/accounts');
    const before = (await state(K.ownerPk, freshIp())).buckets.read.remaining;
    const r = await get(K.ownerPk, ip2);
    expect(r.status).toBe(429);
    expect(r.headers.get('x-ratelimit-remaining')).toBe(String(before - 1));
  });

  it('GET {wid}/rate-limit spends nothing and reports every bucket and the IP layer', async () => {
    const ip = freshIp();
    await get(K.wsAdmin, ip);
    const a = await state(K.wsAdmin, ip);
    const b = await state(K.wsAdmin, ip);
    expect(a).toEqual(b);
    expect(a).toMatchObject({
      plan: 'growth',
      buckets: {
        read: { limit: 20, used: 1, remaining: 19 },
        write: { limit: 10, used: 0 },
        bulk: { limit: 4, used: 0 },
      },
      ip: { limit: 100, used: 1, remaining: 99 },
    });
    expect(a.buckets.read.reset).toBe(Math.floor(clock.now() / 60_000) * 60 + 60);
  });

  it('paused, 150002, 150003, 150004 and 404 requests leave both layers unchanged, but carry the headers', async () => {
    const ip = freshIp();
    await get(K.wsAdmin, ip);
    const bad = await get('svc_ws_' + 'X'.repeat(36), ip);
    expect(bad.body.errorCode).toBe('150002');
    expect(bad.headers.get('x-ratelimit-ip-remaining')).toBe('99');
    expect(bad.headers.get('x-ratelimit-limit')).toBeNull();
    const noScope = await get(K.wsNoScope, ip);
    expect(noScope.body.errorCode).toBe('150003');
    expect(noScope.headers.get('x-ratelimit-remaining')).toBe('20');
    const other = await get(K.wsOther, ip);
    expect(other.body.errorCode).toBe('150004');
    const missing = await get(K.wsAdmin, ip, '/v2/workspaces/100/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    expect(missing.headers.get('x-ratelimit-remaining')).toBe('19');

    expect((await s.internal('PATCH', '/internal/organizations/1', { paused: true })).status).toBe(200);
    try {
      const paused = await get(K.wsAdmin, ip);
      expect(paused.status).toBe(403);
      expect(paused.body).toEqual({
        success: false,
        data: null,
        errorCode: '040006',
        errorMessage: expect.any(String),
      });
      expect(paused.headers.get('x-ratelimit-remaining')).toBe('19');
      expect(paused.headers.get('x-ratelimit-ip-remaining')).toBe('99');
      const pausedState = await get(K.wsAdmin, ip, '/v2/workspaces/100/rate-limit');
      expect(pausedState.body.errorCode).toBe('040006'); // reads included
    } finally {
      await s.internal('PATCH', '/internal/organizations/1', { paused: false });
    }
    const st = await state(K.wsAdmin, ip);
    expect(st.buckets.read.used).toBe(1);
    expect(st.ip.used).toBe(1);
  });

  it('a paused organization counts no failed authentication', async () => {
    const ip = freshIp();
    await s.internal('PATCH', '/internal/organizations/1', { paused: true });
    try {
      for (let i = 0; i < 6; i++) expect((await get(K.wsAdmin, ip)).body.errorCode).toBe('040006');
    } finally {
      await s.internal('PATCH', '/internal/organizations/1', { paused: false });
    }
    expect((await get(K.wsAdmin, ip)).status).toBe(200);
  });
});

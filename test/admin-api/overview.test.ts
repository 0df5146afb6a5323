// The console's first page through the admin API: GET /api/overview counts organizations and keys,
// reads today's traffic from the usage history, lists the organizations whose monthly quota is 80 % or
// more spent (read from the real month counters without spending) and the keys expiring within 7 days;
// GET /api/search finds organizations and keys by name, id or hint, and refuses an empty or long query.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack, type Res } from '../helpers/stack.js';
import { adminCall, adminToken } from '../helpers/admin-api.js';
import { ensureUsageTables, insertUsage } from '../access/usage-history-rows.js';
import { monthCounter } from '../../src/limits/counters.js';

// 2026-11-22T12:30:10Z
const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 30, 10));
let stack: Stack;
let token = '';

const call = (method: string, path: string, body?: unknown): Promise<Res> =>
  adminCall(stack.app.adminApiUrl!, method, path, { token, body, ip: '198.51.100.8' });

beforeAll(async () => {
  stack = await startStack({ clock, env: { ADMIN_API_PORT: '0' } });
  token = (await adminToken(stack, 'write', 'overview', clock)).token;
  await ensureUsageTables(stack.db);
});
afterAll(() => stack?.close());

describe('GET /api/overview', () => {
  it("counts, today's requests from the history, quotas 80 % spent, keys expiring within 7 days", async () => {
    await insertUsage(stack.db, [
      { table: 'usage_day', at: '2026-11-22T00:00Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 30 },
      { table: 'usage_day', at: '2026-11-22T00:00Z', org: 0, key: 0, outcome: 'refused_150001', count: 4 },
      { table: 'usage_day', at: '2026-11-22T00:00Z', org: 2, key: 2000, outcome: 'limited_month', count: 1 },
      { table: 'usage_day', at: '2026-11-21T00:00Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 500 },
    ]);
    // Organization 2 spends 8 of 10 (80 %), organization 3 3 of 10, organization 1 has no quota.
    for (const [org, spent] of [
      [2, 8],
      [3, 3],
    ]) {
      expect((await call('PATCH', `/api/organizations/${org}/limits`, { monthlyQuota: 10 })).status).toBe(200);
      for (let i = 0; i < spent; i++) await stack.stores.limiter.spend([monthCounter(org, 10)!], 1);
    }
    expect((await call('PATCH', '/api/keys/1001', { expiresAt: '2026-11-29T12:00:00Z' })).status).toBe(200);
    expect((await call('PATCH', '/api/keys/1002', { expiresAt: '2026-11-29T12:31:00Z' })).status).toBe(200);
    expect((await call('POST', '/api/keys/1003/expire', {})).status).toBe(200);

    const r = await call('GET', '/api/overview');
    expect(r.status, r.text).toBe(200);
    expect(r.body.organizations).toBe(3);
    expect(r.body.keys).toMatchObject({ expired: 1, revoked: 0 });
    expect(r.body.keys.active + r.body.keys.expired + r.body.keys.revoked).toBe(r.body.keys.total);
    expect(r.body.today).toMatchObject({ date: '2026-11-22', admitted: 30, refused: 5 });
    expect(r.body.today.outcomes).toMatchObject({ forwarded_2xx: 30, refused_150001: 4, limited_month: 1 });
    expect(r.body.quotas).toEqual([
      { organizationId: 2, name: 'Beta', used: 8, limit: 10, percent: 80, reset: Date.UTC(2026, 11, 1) / 1000 },
    ]);
    expect(r.body.expiringKeys.map((k: { id: number; expiresAt: string }) => [k.id, k.expiresAt])).toEqual([
      [1001, '2026-11-29T12:00:00.000Z'],
    ]);
    // Reading spent nothing.
    const [state] = await stack.stores.limiter.spend([monthCounter(2, 10)!], 0);
    expect(state.used).toBe(8);
  });
});

describe('GET /api/search', () => {
  it('organizations and keys by name, id or hint', async () => {
    const byName = await call('GET', '/api/search?q=beta');
    expect(byName.status, byName.text).toBe(200);
    expect(byName.body.organizations).toEqual([{ id: 2, name: 'Beta', plan: 'free', paused: false, apiAccess: true }]);
    // By name: beta partner, then beta ws.
    expect(byName.body.keys.map((k: { id: number }) => k.id)).toEqual([2001, 2000]);
    expect(byName.body.keys[1]).toEqual({
      id: 2000,
      organizationId: 2,
      organizationName: 'Beta',
      name: 'beta ws',
      hint: 'svc_ws_Org2…',
      type: 'workspace',
      status: 'active',
    });
    expect((await call('GET', '/api/search?q=1020')).body.keys.map((k: { id: number }) => k.id)).toEqual([1020]);
    expect((await call('GET', '/api/search?q=svc_v1_Partner000')).body.keys.map((k: { id: number }) => k.id)).toEqual([
      1020,
    ]);
  });

  it('an empty, blank or long query: 400 invalid_request', async () => {
    for (const q of ['', 'q=', 'q=%20%20', `q=${'x'.repeat(101)}`, 'q=%00']) {
      const r = await call('GET', `/api/search?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
    }
  });
});

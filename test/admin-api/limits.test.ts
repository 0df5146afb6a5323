// Per-customer limits through the admin API: a PATCH of a key's or an organization's limits is one
// service-layer change (one audit row, the admin token as the actor, the access version bumped), so the
// gateway's very next request of that key already carries the new budget in its headers; a read token
// reads the limits and may not change them; the key's usage shows the organization's monthly quota from
// the real month counter, read without spending.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack, type Res } from '../helpers/stack.js';
import { adminCall, adminToken } from '../helpers/admin-api.js';
import { K } from '../fixtures/seed.js';

// 2026-11-22T12:00:10Z: the month turns at 2026-12-01T00:00Z.
const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 10));
const DECEMBER_S = Date.UTC(2026, 11, 1) / 1000;
let stack: Stack;
const tokens = { read: { id: 0, token: '' }, write: { id: 0, token: '' } };

const call = (method: string, path: string, token: string, body?: unknown): Promise<Res> =>
  adminCall(stack.app.adminApiUrl!, method, path, { token, body, ip: '198.51.100.3' });

const viaGateway = () => stack.request('GET', '/v2/workspaces/100/accounts', { key: K.wsAdmin, ip: '203.0.113.61' });

async function auditRows(action: string) {
  return stack.db.query(
    `SELECT actor_kind, actor_id, actor_name, target_ids, organization_id, before, after, request_id
       FROM audit_events WHERE action = $1 ORDER BY id`,
    [action],
  );
}

beforeAll(async () => {
  stack = await startStack({ clock, env: { ADMIN_API_PORT: '0' } });
  for (const role of ['read', 'write'] as const) tokens[role] = await adminToken(stack, role, `limits-${role}`, clock);
});
afterAll(() => stack?.close());

describe("a key's limits", () => {
  it('a read token reads them and may not change them (403, nothing written)', async () => {
    const r = await call('GET', '/api/keys/1000/limits', tokens.read.token);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      keyId: 1000,
      organizationId: 1,
      plan: 'growth',
      overrides: { read: null, write: null, bulk: null },
      effective: { read: 20, write: 10, bulk: 4, monthlyQuota: null },
    });
    const refused = await call('PATCH', '/api/keys/1000/limits', tokens.read.token, { read: 7 });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    expect(await auditRows('key.limits')).toEqual([]);
    expect((await call('GET', '/api/keys/1000/limits', tokens.read.token)).body.overrides.read).toBeNull();
  });

  it('a PATCH changes the headers of the very next gateway request and writes one audit row, the token as actor', async () => {
    // The principal is cached by the gateway before the change.
    const before = await viaGateway();
    expect(before.status, before.text).toBe(200);
    expect(before.headers.get('x-ratelimit-limit')).toBe('20');

    const r = await call('PATCH', '/api/keys/1000/limits', tokens.write.token, { read: 7 });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      keyId: 1000,
      overrides: { read: 7, write: null, bulk: null },
      effective: { read: 7 },
    });

    const next = await viaGateway();
    expect(next.status, next.text).toBe(200);
    expect(next.headers.get('x-ratelimit-limit')).toBe('7');
    expect(next.headers.get('ratelimit-policy')).toContain('"read";q=7;w=60');

    const rows = await auditRows('key.limits');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor_kind: 'admin-token',
      actor_id: String(tokens.write.id),
      actor_name: 'limits-write',
      target_ids: ['1000'],
      organization_id: 1,
      before: { read: null, write: null, bulk: null },
      after: { read: 7, write: null, bulk: null },
    });
    expect(rows[0].request_id).toBe(r.headers.get('x-request-id'));

    // Back to the plan's with null: the next request says so.
    expect((await call('PATCH', '/api/keys/1000/limits', tokens.write.token, { read: null })).status).toBe(200);
    expect((await viaGateway()).headers.get('x-ratelimit-limit')).toBe('20');
    expect(await auditRows('key.limits')).toHaveLength(2);
  });

  it('refuses a quota on a key and a budget out of range, in the one error shape', async () => {
    for (const body of [{ monthlyQuota: 5 }, { read: 0 }, { read: 1.5 }, {}]) {
      const r = await call('PATCH', '/api/keys/1000/limits', tokens.write.token, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(r.body)).toEqual(['error']);
      expect(r.body.error.code).toBe('invalid_request');
    }
    expect(await auditRows('key.limits')).toHaveLength(2);
  });
});

describe("an organization's limits and monthly quota", () => {
  it('a PATCH sets the quota: the next request carries the month policy, the usage shows the real month counter', async () => {
    const none = await call('GET', '/api/keys/1000/usage', tokens.read.token);
    expect(none.status, none.text).toBe(200);
    expect(none.body.monthlyQuota).toBeNull();

    const r = await call('PATCH', '/api/organizations/1/limits', tokens.write.token, { monthlyQuota: 1000, write: 9 });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      organizationId: 1,
      overrides: { read: null, write: 9, bulk: null, monthlyQuota: 1000 },
      effective: { read: 20, write: 9, bulk: 4, monthlyQuota: 1000 },
    });
    expect(r.body).not.toHaveProperty('keyId');
    const rows = await auditRows('organization.limits');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor_kind: 'admin-token',
      actor_id: String(tokens.write.id),
      target_ids: ['1'],
      after: { write: 9, monthlyQuota: 1000 },
    });

    const next = await viaGateway();
    expect(next.status).toBe(200);
    expect(next.headers.get('ratelimit-policy')).toMatch(/"month";q=1000;w=\d+/);
    expect((await call('GET', '/api/keys/1000/limits', tokens.read.token)).body.effective).toMatchObject({
      write: 9,
      monthlyQuota: 1000,
    });

    // The admitted request was counted in the month; reading the usage spends nothing.
    for (let i = 0; i < 2; i++) {
      const u = await call('GET', '/api/keys/1000/usage', tokens.read.token);
      expect(u.status, u.text).toBe(200);
      expect(u.body.monthlyQuota).toEqual({ limit: 1000, used: 1, remaining: 999, reset: DECEMBER_S });
      expect(u.body.buckets.write.limit).toBe(9);
      expect(u.body.buckets.read.used).toBe(4); // every gateway request of this file, this minute
    }
    // A partner key of the organization shows the same month.
    const partner = await call('GET', '/api/keys/1020/usage?ip=203.0.113.61', tokens.read.token);
    expect(partner.body.monthlyQuota).toMatchObject({ limit: 1000, used: 1 });
    expect(partner.body.ip).toMatchObject({ address: '203.0.113.61', limit: 100 });

    // "none" drops the quota: no month policy on the next request, none in the usage.
    expect(
      (await call('PATCH', '/api/organizations/1/limits', tokens.write.token, { monthlyQuota: 'none' })).body.effective
        .monthlyQuota,
    ).toBeNull();
    expect((await viaGateway()).headers.get('ratelimit-policy')).not.toContain('"month"');
    expect((await call('GET', '/api/keys/1000/usage', tokens.read.token)).body.monthlyQuota).toBeNull();
  });

  it('a read token reads and may not change; an unknown organization is 404', async () => {
    expect((await call('GET', '/api/organizations/1/limits', tokens.read.token)).status).toBe(200);
    const refused = await call('PATCH', '/api/organizations/1/limits', tokens.read.token, { read: 1 });
    expect(refused.status).toBe(403);
    expect((await call('GET', '/api/organizations/999/limits', tokens.read.token)).body.error.code).toBe('not_found');
    expect(
      (await call('PATCH', '/api/organizations/999/limits', tokens.write.token, { read: 1 })).body.error.code,
    ).toBe('not_found');
  });
});

// The admin API's gate: every operation refused without a token, with an unknown or revoked token, and
// with a read token on a write, all in one error shape; failed attempts from one address limited per
// minute; answers never hold a stored secret or hash; admin-token changes audited where the trail exists.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, fetchRes, FakeClock, type Stack, type Res } from '../helpers/stack.js';
import { ROUTES } from '../../src/admin-api/routes.js';
import { ADMIN_AUTH_FAILURES } from '../../src/admin-api/auth.js';
import { createAdminToken, revokeAdminToken, hashAdminToken } from '../../src/access/service/admin-tokens.js';
import { getPepper } from '../../src/access/pepper.js';
import { concretePath } from '../helpers/routes.js';
import { adminCall } from '../helpers/admin-api.js';

let stack: Stack;
let base: string;
let pepper: string;
const clock = new FakeClock();
const tokens: Record<'read' | 'write' | 'revoked', string> = { read: '', write: '', revoked: '' };

/** A concrete path of a route (ids 1, an existing organization/key/token where it matters). */
const concrete = (path: string) => concretePath(path, () => '1');

const call = (method: string, path: string, o: { token?: string; body?: unknown; ip?: string } = {}): Promise<Res> =>
  adminCall(base, method, path, o);

function expectError(r: Res, status: number, code: string) {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(r.body)).toEqual(['error']);
  expect(r.body.error.code).toBe(code);
  expect(typeof r.body.error.message).toBe('string');
  expect(r.body.error.requestId).toBe(r.headers.get('x-request-id'));
}

beforeAll(async () => {
  stack = await startStack({ clock, env: { ADMIN_API_PORT: '0' } });
  base = stack.app.adminApiUrl!;
  pepper = await getPepper(stack.db);
  const ctx = { db: stack.db, pepper, clock, actor: { kind: 'cli' as const, osUser: 'test' } };
  tokens.read = (await createAdminToken(ctx, { name: 'reader', role: 'read' })).token;
  tokens.write = (await createAdminToken(ctx, { name: 'writer', role: 'write' })).token;
  const revoked = await createAdminToken(ctx, { name: 'gone', role: 'write' });
  await revokeAdminToken(ctx, revoked.id);
  tokens.revoked = revoked.token;
});
afterAll(() => stack?.close());

describe('every route', () => {
  it.each(ROUTES.map((r) => [r.method, r.path, r.role] as const))(
    '%s %s is refused without a token, with a revoked and a malformed token',
    async (method, path) => {
      // A fresh address per route: these failures must not add up to the brute-force limit.
      const ip = `198.51.100.${ROUTES.findIndex((r) => r.path === path && r.method === method) + 10}`;
      const body = method === 'GET' ? undefined : {};
      const none = await call(method, concrete(path), { body, ip });
      expectError(none, 401, 'unauthorized');
      expect(none.headers.get('www-authenticate')).toBe('Bearer realm="keygate-admin"');
      expectError(await call(method, concrete(path), { token: tokens.revoked, body, ip }), 401, 'unauthorized');
      expectError(
        await call(method, concrete(path), { token: 'kga_' + 'x'.repeat(40), body, ip }),
        401,
        'unauthorized',
      );
    },
  );

  it.each(ROUTES.filter((r) => r.role === 'write').map((r) => [r.method, r.path] as const))(
    '%s %s is refused to a read token (403) before anything changes',
    async (method, path) => {
      const r = await call(method, concrete(path), { token: tokens.read, body: {} });
      expectError(r, 403, 'forbidden');
    },
  );

  it('covers the limits routes: each refused without a token; each PATCH refused to a read token, nothing changed', async () => {
    const limits = ROUTES.filter((r) => r.path.endsWith('/limits')).map((r) => `${r.method} ${r.path}`);
    expect(limits.sort()).toEqual([
      'GET /api/keys/{id}/limits',
      'GET /api/organizations/{id}/limits',
      'PATCH /api/keys/{id}/limits',
      'PATCH /api/organizations/{id}/limits',
    ]);
    const ip = '198.51.100.250';
    for (const path of ['/api/organizations/1/limits', '/api/keys/1000/limits']) {
      expectError(await call('GET', path, { ip }), 401, 'unauthorized');
      expectError(await call('PATCH', path, { body: { read: 3 }, ip }), 401, 'unauthorized');
      expectError(await call('PATCH', path, { token: tokens.read, body: { read: 3 } }), 403, 'forbidden');
      const now = await call('GET', path, { token: tokens.read });
      expect(now.status, now.text).toBe(200);
      expect(now.body.overrides.read).toBeNull();
    }
  });

  it('an unknown path and a wrong method answer only after the token is checked', async () => {
    expectError(await call('GET', '/api/nope'), 401, 'unauthorized');
    expectError(await call('GET', '/api/nope', { token: tokens.read }), 404, 'not_found');
    expectError(await call('DELETE', '/api/keys/1', { token: tokens.write }), 405, 'method_not_allowed');
  });
});

describe('a write token', () => {
  it('creates a key whose secret is shown once and works at the gateway; lists never show it or a hash', async () => {
    const created = await call('POST', '/api/keys', {
      token: tokens.write,
      body: { type: 'workspace', name: 'from admin api', workspaceId: 100, scopes: ['accounts:read'] },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.secret).toMatch(/^svc_ws_[A-Za-z0-9]{40}$/);
    expect(created.body.status).toBe('active');
    const secret: string = created.body.secret;
    expect(
      (await stack.request('GET', '/v2/workspaces/100/accounts', { key: secret, ip: '203.0.113.50' })).status,
    ).toBe(200);

    const again = await call('GET', `/api/keys/${created.body.id}`, { token: tokens.read });
    const list = await call('GET', '/api/keys?organization=1&limit=200', { token: tokens.read });
    const hash = (await stack.db.query(`SELECT key_hash FROM api_keys WHERE id = $1`, [created.body.id]))[0].key_hash;
    for (const r of [again, list]) {
      expect(r.status).toBe(200);
      expect(r.text).not.toContain(secret);
      expect(r.text).not.toContain(secret.slice(7));
      expect(r.text).not.toContain(hash);
      expect(r.text).not.toMatch(/key_hash|keyHash/);
    }
    expect(again.body).not.toHaveProperty('secret');

    const revoked = await call('POST', `/api/keys/${created.body.id}/revoke`, { token: tokens.write });
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    expect(
      (await stack.request('GET', '/v2/workspaces/100/accounts', { key: secret, ip: '203.0.113.50' })).status,
    ).toBe(401);
  });

  it('refuses a bad body in the same shape (400), naming the field', async () => {
    const r = await call('POST', '/api/keys', { token: tokens.write, body: { type: 'workspace', name: 'x' } });
    expectError(r, 400, 'invalid_request');
    expect(r.body.error.message).toMatch(/workspaceId/);
    const bad = await fetchRes(base + '/api/keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.write}`, 'content-type': 'application/json' },
      body: '{',
    });
    expectError(bad, 400, 'invalid_request');
    expectError(
      await call('POST', '/api/keys', {
        token: tokens.write,
        body: { type: 'workspace', name: 'x', workspaceId: 999999 },
      }),
      404,
      'not_found',
    );
    expectError(await call('GET', '/api/keys?status=gone', { token: tokens.read }), 400, 'invalid_request');
  });

  it('makes each change through the service layer: one audit row per change, with the token as the actor', async () => {
    const made = await call('POST', '/api/keys', {
      token: tokens.write,
      body: { type: 'partner', name: 'audited', organizationId: 1 },
    });
    expect(made.status, made.text).toBe(201);
    const id = made.body.id;
    expect(
      (await call('POST', `/api/keys/${id}/rotate`, { token: tokens.write, body: { graceSeconds: 0 } })).status,
    ).toBe(200);
    expect((await call('POST', `/api/keys/${id}/revoke`, { token: tokens.write })).status).toBe(200);
    const trail = await call('GET', `/api/audit?organization=1&actor=admin-token&action=key.`, { token: tokens.read });
    expect(trail.status, trail.text).toBe(200);
    const mine = trail.body.items.filter((e: { targetIds: string[] }) => e.targetIds.includes(String(id)));
    expect(mine.map((e: { action: string }) => e.action)).toEqual(['key.revoke', 'key.rotate', 'key.create']);
    for (const e of mine) {
      expect(e.actor).toMatchObject({ kind: 'admin-token', name: 'writer' });
      expect(e.requestId).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(trail.text).not.toContain(made.body.secret);
  });

  it('creates and revokes admin tokens: the new token is shown once, works, and stops working when revoked', async () => {
    const made = await call('POST', '/api/admin-tokens', { token: tokens.write, body: { name: 'ci', role: 'read' } });
    expect(made.status, made.text).toBe(201);
    expect(made.body.token).toMatch(/^kga_[A-Za-z0-9]{40}$/);
    expect(made.body.createdBy).toMatch(/^admin-token:\d+$/);
    const me = await call('GET', '/api/me', { token: made.body.token });
    expect(me.body).toEqual({ id: made.body.id, name: 'ci', role: 'read' });
    const listed = await call('GET', '/api/admin-tokens?all=true', { token: tokens.read });
    expect(listed.text).not.toContain(made.body.token);
    expect(listed.text).not.toContain(hashAdminToken(pepper, made.body.token));
    const row = listed.body.items.find((t: { id: number }) => t.id === made.body.id);
    expect(row.lastUsedAt).not.toBeNull();
    expect(
      (await call('POST', `/api/admin-tokens/${made.body.id}/revoke`, { token: tokens.write })).body.revokedAt,
    ).not.toBeNull();
    expectError(await call('GET', '/api/me', { token: made.body.token }), 401, 'unauthorized');
    // Both changes are in the audit trail, with the token that made them; neither row holds the token.
    const trail = await call('GET', '/api/audit?action=admin-token.', { token: tokens.read });
    const rows = trail.body.items.filter((e: { targetIds: string[] }) => e.targetIds.includes(String(made.body.id)));
    expect(rows.map((e: { action: string }) => e.action)).toEqual(['admin-token.revoke', 'admin-token.create']);
    expect(rows[0].actor).toMatchObject({ kind: 'admin-token', name: 'writer' });
    expect(trail.text).not.toContain(made.body.token);
  });
});

describe('brute force', () => {
  it(`refuses an address after ${ADMIN_AUTH_FAILURES} failed attempts in a minute (429, Retry-After), a valid token too, until the next minute`, async () => {
    clock.setSecond(10);
    const ip = '192.0.2.77';
    for (let i = 0; i < ADMIN_AUTH_FAILURES; i++)
      expectError(
        await call('GET', '/api/me', { token: `kga_${String(i).padStart(40, 'A')}`, ip }),
        401,
        'unauthorized',
      );
    const refused = await call('GET', '/api/me', { token: tokens.read, ip });
    expectError(refused, 429, 'too_many_attempts');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(50);
    // Another address is not affected; the next minute the address may try again.
    expect((await call('GET', '/api/me', { token: tokens.read, ip: '192.0.2.78' })).status).toBe(200);
    clock.advance(60_000);
    expect((await call('GET', '/api/me', { token: tokens.read, ip })).status).toBe(200);
  });
});

describe('the console files', () => {
  it('are served at / with a strict Content-Security-Policy and no third-party origin', async () => {
    const page = await fetch(base + '/');
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    const js = await fetch(base + '/app.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    const text = await js.text();
    expect(text.length).toBeGreaterThan(5_000);
    expect(text).not.toMatch(/<script|cdn\.|unpkg|jsdelivr/);
  });
});

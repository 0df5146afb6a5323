// The verify API (POST /verify on DECISION_PORT, src/decision/verify-api.ts): a caller that is not a
// proxy names a key and a request; keygate decides it as its proxy would, spending exactly once, and
// answers in JSON. Bad bodies are 400 invalid_request naming the field, never echoing the key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

const clock = new FakeClock();
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, env: { DECISION_PORT: '0' } });
});
afterAll(async () => s?.close());

const verify = async (body: unknown, headers: Record<string, string> = {}) => {
  const r = await fetch(`${s.app.decisionUrl}/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: JSON.parse(text), text };
};
const readsLeft = async () =>
  (await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.30.9.9' })).body.data.buckets.read
    .remaining;

describe('POST /verify', () => {
  it('allows a valid key with its identity, limits and client fields, spending exactly once', async () => {
    clock.advance(60_000);
    const before = await readsLeft();
    const r = await verify({ key: K.wsAdmin, path: '/v2/workspaces/100/accounts', ip: '10.30.0.1' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      allowed: true,
      status: 200,
      code: null,
      message: null,
      identity: { keyType: 'workspace', organizationId: 1, workspaceId: 100, role: 'ADMIN' },
    });
    expect(r.body.requestId).toEqual(r.body.headers['x-request-id']);
    expect(r.body.limits.read).toMatchObject({ limit: 20, used: 20 - before + 1, remaining: before - 1 });
    expect(r.body.limits.ip).toMatchObject({ limit: 100, used: 1, remaining: 99 });
    expect(r.body.limits.read.reset).toBe(Number(r.body.headers['x-ratelimit-reset']));
    expect(r.body.headers['x-ratelimit-remaining']).toBe(String(before - 1));
    expect(await readsLeft()).toBe(before - 1);
    expect(r.text).not.toContain(K.wsAdmin);
  });

  it('refuses as the proxy would: status and code, nothing echoed', async () => {
    const bad = await verify({ key: 'svc_ws_' + 'Unknown'.padEnd(36, '0'), path: '/v2/workspaces/100/accounts' });
    expect(bad.status).toBe(200);
    expect(bad.body).toMatchObject({ allowed: false, status: 401, code: '150002', identity: null });
    expect(bad.text).not.toContain('Unknown000');
    const scope = await verify({ key: K.wsViewer, method: 'POST', path: '/v2/workspaces/100/tags' });
    expect(scope.body.allowed).toBe(false);
    expect(scope.body.status).toBe(403);
    expect(typeof scope.body.code).toBe('string');
  });

  it('takes a /v1 key as X-Api-Key', async () => {
    const r = await verify({ key: K.partner, path: '/v1/email-accounts' });
    expect(r.body).toMatchObject({ allowed: true, identity: { keyType: 'partner' } });
    expect(r.body.limits.partner).toMatchObject({ limit: expect.any(Number) });
  });

  it('spends a write bucket for a write, and answers the status route itself without spending', async () => {
    clock.advance(60_000);
    const w = await verify({ key: K.wsAdmin, method: 'POST', path: '/v2/workspaces/100/tags' });
    expect(w.body.allowed).toBe(true);
    expect(w.body.limits.write).toMatchObject({ used: 1 });
    const st = await verify({ key: K.wsAdmin, path: '/v2/workspaces/100/rate-limit' });
    expect(st.body).toMatchObject({ allowed: false, status: 200, code: null });
    expect(
      (await verify({ key: K.wsAdmin, method: 'POST', path: '/v2/workspaces/100/tags' })).body.limits.write,
    ).toMatchObject({ used: 2 });
  });

  it('answers 400 invalid_request naming the field for a body that is not a verify request', async () => {
    const cases: [unknown, string][] = [
      ['not json', 'body'],
      [[1, 2], 'body'],
      [{ path: '/v2/workspaces/100/tags' }, 'key'],
      [{ key: '', path: '/v2/workspaces/100/tags' }, 'key'],
      [{ key: 'svc_ws_a b', path: '/v2/workspaces/100/tags' }, 'key'],
      [{ key: K.wsAdmin }, 'path'],
      [{ key: K.wsAdmin, path: 'v2/no-slash' }, 'path'],
      [{ key: K.wsAdmin, path: '/v2/a b' }, 'path'],
      [{ key: K.wsAdmin, path: '/v2/x', method: 'get' }, 'method'],
      [{ key: K.wsAdmin, path: '/v2/x', method: 7 }, 'method'],
      [{ key: K.wsAdmin, path: '/v2/x', ip: 'localhost' }, 'ip'],
      [{ key: K.wsAdmin, path: '/v2/x', extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const r = await verify(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
      expect(r.body.error.details.field).toBe(field);
      expect(r.text).not.toContain(K.wsAdmin);
    }
  });

  it('refuses other methods (405) and a body over its bound (413)', async () => {
    const g = await fetch(`${s.app.decisionUrl}/verify`);
    expect(g.status).toBe(405);
    expect((await g.json()).error.code).toBe('method_not_allowed');
    const big = await verify({ key: K.wsAdmin, path: '/v2/x', pad: 'x'.repeat(20_000) });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('payload_too_large');
  });
});

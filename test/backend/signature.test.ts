// docs/decisions.md section 5: the backend refuses /v1 and /v2 requests whose signature is missing, wrong or stale.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, fetchRes, FakeClock, type Stack } from '../helpers/stack.js';
import { encodeIdentity, sign } from '../../src/http/identity.js';

const clock = new FakeClock();
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock });
});
afterAll(async () => s?.close());

const identity = encodeIdentity({
  keyId: 1000,
  keyType: 'workspace',
  organizationId: 1,
  userId: null,
  workspaceId: 100,
  role: 'ADMIN',
  scopes: ['tags:read'],
  plan: 'growth',
});
function signed(
  path: string,
  o: { ts?: number; secret?: string; method?: string; signedPath?: string; id?: string } = {},
) {
  const ts = String(o.ts ?? clock.now());
  const rid = 'req-1';
  return fetchRes(s.backendUrl + path, {
    method: o.method ?? 'GET',
    headers: {
      'x-request-id': rid,
      'x-gateway-identity': o.id ?? identity,
      'x-gateway-timestamp': ts,
      'x-gateway-signature': sign(o.secret ?? s.gatewaySecret, ts, rid, 'GET', o.signedPath ?? path, identity),
    },
  });
}

describe('backend signature check', () => {
  it('accepts a fresh, correct signature and echoes the request id in meta', async () => {
    const r = await signed('/v2/workspaces/100/tags');
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toBe('req-1');
  });
  it('an id beyond any stored id is 404, not a driver error', async () => {
    const r = await signed('/v2/workspaces/100/accounts/99999999999');
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
  });
  it.each([
    ['missing', () => fetchRes(s.backendUrl + '/v2/workspaces/100/tags', {})],
    ['wrong secret', () => signed('/v2/workspaces/100/tags', { secret: 'another-secret-0123456789' })],
    ['older than 60 s', () => signed('/v2/workspaces/100/tags', { ts: clock.now() - 61_000 })],
    ['signed for another path', () => signed('/v2/workspaces/100/tags', { signedPath: '/v2/workspaces/101/tags' })],
    [
      'identity swapped after signing',
      () =>
        signed('/v2/workspaces/100/tags', {
          id: encodeIdentity({
            keyId: 1,
            keyType: 'workspace',
            organizationId: 2,
            userId: null,
            workspaceId: 100,
            role: 'OWNER',
            scopes: [],
            plan: null,
          }),
        }),
    ],
    ['a /v1 route unsigned', () => fetchRes(s.backendUrl + '/v1/dashboard', {})],
  ])('refuses %s: 401 unauthenticated in Envelope B', async (_n, call) => {
    const r = await call();
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('unauthenticated');
    expect(r.body.meta.request_id).toBeTruthy();
  });
});

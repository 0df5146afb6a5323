// The decision service under a rest profile (docs/profiles.md, docs/forward-auth.md): another proxy asks
// for a consumer's request and gets the same decision the gateway's own pipeline makes, the key read
// from the profile's field, refusals as the profile's problem details, and POST /verify naming them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { insertConsumerKey } from '../helpers/keys.js';

const clock = new FakeClock();
clock.setSecond(5);
let s: Stack;
let url: string;
let reader: string;
beforeAll(async () => {
  // No seed: the workspace API's demo keys are not keys of this profile.
  s = await startStack({
    clock,
    seed: {},
    env: { DECISION_PORT: '0', PROFILE_FILE: 'test/fixtures/profiles/shop.yaml' },
  });
  url = s.app.decisionUrl!;
  reader = (await insertConsumerKey(s.db, { tag: 'decided', plan: 'free', scopes: ['orders:read'] })).secret;
});
afterAll(async () => s?.close());

const traefik = (method: string, uri: string, more: Record<string, string> = {}) => ({
  'x-forwarded-method': method,
  'x-forwarded-uri': uri,
  'x-forwarded-for': '10.40.0.1',
  ...more,
});

describe('/auth under a rest profile', () => {
  it("allows a consumer's request with its rate-limit fields and the signed identity for the service", async () => {
    const r = await fetch(url + '/auth', {
      headers: traefik('GET', '/api/orders', { authorization: `Bearer ${reader}` }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ratelimit-limit')).toBe('60');
    expect(r.headers.get('x-ratelimit-remaining')).toBe('59');
    expect(r.headers.get('x-gateway-identity')).toBeTruthy();
  });

  it("refuses a missing scope with the profile's problem details", async () => {
    const r = await fetch(url + '/auth', {
      headers: traefik('POST', '/api/orders', { authorization: `Bearer ${reader}` }),
    });
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(await r.json()).toMatchObject({
      type: 'https://shop.example/problems/missing-scope',
      code: 'missing-scope',
    });
  });
});

describe('POST /verify under a rest profile', () => {
  const verify = async (body: unknown) => {
    const r = await fetch(`${url}/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: await r.json(), text: JSON.stringify(body) };
  };

  it("presents the key as the profile reads it and reports the consumer's layers", async () => {
    const r = await verify({ key: reader, path: '/api/orders', ip: '10.40.0.2' });
    expect(r.body).toMatchObject({
      allowed: true,
      status: 200,
      identity: { keyType: 'consumer', workspaceId: null },
    });
    expect(r.body.limits.read).toMatchObject({ limit: 60 });
    expect(r.body.limits.ip).toMatchObject({ limit: 100, used: 1 });
  });

  it("names a refusal by the profile's code and detail", async () => {
    const r = await verify({ key: reader, method: 'POST', path: '/api/orders' });
    expect(r.body).toMatchObject({
      allowed: false,
      status: 403,
      code: 'missing-scope',
      message: 'The key may not call this route.',
      identity: null,
    });
  });
});

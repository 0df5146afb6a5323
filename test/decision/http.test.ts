// The HTTP decision service (src/decision/http.ts, docs/forward-auth.md) on a real listener: /auth as
// Traefik and nginx call it, the signed answer token and /answer, /envoy/..., /healthz, and hostile input
// answered in Envelope B without a stack.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request as rawRequest } from 'node:http';
import { connect } from 'node:net';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { UNSIGNED_BODY, sign } from '../../src/http/identity.js';
import { createDecisionServer } from '../../src/decision/http.js';
import { defaultBounds, descriptorLimit } from '../../src/ops/connection-limits.js';

const clock = new FakeClock();
let s: Stack;
let url: string;
beforeAll(async () => {
  s = await startStack({ clock, env: { DECISION_PORT: '0', CORS_ORIGINS: 'https://app.example' } });
  url = s.app.decisionUrl!;
});
afterAll(async () => s?.close());

const ask = (path: string, headers: Record<string, string>, method = 'GET') => fetch(url + path, { method, headers });
/** Traefik's ForwardAuth description of a request. */
const traefik = (method: string, uri: string, more: Record<string, string> = {}) => ({
  'x-forwarded-method': method,
  'x-forwarded-uri': uri,
  'x-forwarded-for': '10.20.0.1',
  ...more,
});
const nginx = (method: string, uri: string, more: Record<string, string> = {}) => ({
  'x-keygate-proxy': 'nginx',
  'x-original-method': method,
  'x-original-uri': uri,
  'x-forwarded-for': '10.20.0.2',
  ...more,
});
const remaining = async (key: string) =>
  (await s.request('GET', '/v2/workspaces/100/rate-limit', { key, ip: '10.20.9.9' })).body;

describe('/auth (Traefik ForwardAuth)', () => {
  it('allows a valid key: 200, empty body, the signed identity and the rate-limit fields as headers', async () => {
    clock.advance(60_000);
    const r = await ask(
      '/auth',
      traefik('GET', '/v2/workspaces/100/accounts?limit=5', {
        authorization: `Bearer ${K.wsAdmin}`,
        'x-request-id': 'req-allowed-1',
      }),
    );
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('');
    expect(r.headers.get('x-request-id')).toBe('req-allowed-1');
    expect(r.headers.get('x-ratelimit-remaining')).toBe('19');
    expect(r.headers.get('x-ratelimit-ip-remaining')).toBe('99');
    const ts = r.headers.get('x-gateway-timestamp')!;
    const identity = r.headers.get('x-gateway-identity')!;
    expect(r.headers.get('x-gateway-signature')).toBe(
      sign(s.gatewaySecret, ts, 'req-allowed-1', 'GET', '/v2/workspaces/100/accounts?limit=5', identity, UNSIGNED_BODY),
    );
    expect(r.headers.get('x-gateway-signature')).toMatch(/^unsigned-body:[0-9a-f]{64}$/);
    // The client's own fields are never echoed.
    expect(r.headers.get('authorization')).toBeNull();
    expect(JSON.stringify([...r.headers])).not.toContain(K.wsAdmin);
  });

  it("refuses with keygate's exact answer: status, fields and body", async () => {
    const r = await ask('/auth', traefik('GET', '/v2/workspaces/100/accounts', { authorization: 'Bearer nope' }));
    expect(r.status).toBe(401);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    const body = await r.json();
    expect(body.errorCode).toBe('150002');
    expect(r.headers.get('x-ratelimit-ip-limit')).toBe('100');
    expect(r.headers.get('x-gateway-signature')).toBeNull();
  });

  it('requires the original target: 400 invalid_request in Envelope B, naming the field', async () => {
    const r = await ask('/auth', { authorization: `Bearer ${K.wsAdmin}` });
    expect(r.status).toBe(400);
    const body = await r.json();
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.details.field).toBe('x-original-uri');
    expect(JSON.stringify(body)).not.toContain(K.wsAdmin);
  });

  it('refuses a described method, target or body size that no request could have', async () => {
    for (const h of [
      traefik('BREW', '/v2/workspaces/100/accounts'),
      traefik('GET', 'http://elsewhere/v2'),
      traefik('GET', '/v2/a b'),
      traefik('POST', '/v2/workspaces/100/tags', { 'x-forwarded-content-length': '12abc' }),
    ]) {
      const r = await ask('/auth', h);
      expect(r.status).toBe(400);
      const text = await r.text();
      expect(JSON.parse(text).error.code).toBe('invalid_request');
      expect(text).not.toMatch(/at \w+ \(/); // no stack
    }
  });

  it('runs the body checks on the described size, never the subrequest’s own', async () => {
    const big = await ask(
      '/auth',
      traefik('POST', '/v2/workspaces/100/tags', {
        authorization: `Bearer ${K.wsAdmin}`,
        'x-forwarded-content-length': String(50 * 1024 * 1024),
      }),
    );
    expect(big.status).toBe(413);
    const getWithBody = await ask(
      '/auth',
      traefik('GET', '/v2/workspaces/100/tags', {
        authorization: `Bearer ${K.wsAdmin}`,
        'x-original-content-length': '5',
      }),
    );
    expect(getWithBody.status).toBe(400);
  });

  it('answers a CORS preflight of the described request as the gateway does, spending nothing', async () => {
    const before = await remaining(K.wsViewer);
    const pre = {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    };
    const r = await ask('/auth', traefik('OPTIONS', '/v2/workspaces/100/tags', pre));
    const g = await s.request('OPTIONS', '/v2/workspaces/100/tags', { headers: pre });
    expect(r.status).toBe(204);
    expect(g.status).toBe(204);
    for (const name of ['access-control-allow-origin', 'access-control-allow-methods', 'vary'])
      expect(r.headers.get(name)).toBe(g.headers.get(name));
    expect((await remaining(K.wsViewer)).data).toEqual(before.data);
    const allowed = await ask(
      '/auth',
      traefik('GET', '/v2/workspaces/100/tags', {
        authorization: `Bearer ${K.wsAdmin}`,
        origin: 'https://app.example',
      }),
    );
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
  });
});

describe('/auth for nginx and /answer', () => {
  it('refuses as 401 with a signed X-Keygate-Answer that /answer renders as the exact answer', async () => {
    const r = await ask('/auth', nginx('GET', '/v2/workspaces/100/accounts', { 'x-request-id': 'req-nginx-1' }));
    expect(r.status).toBe(401);
    expect(await r.text()).toBe('');
    const token = r.headers.get('x-keygate-answer')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[0-9a-f]{64}$/);
    const direct = await ask('/auth', traefik('GET', '/v2/workspaces/100/accounts', { 'x-request-id': 'req-nginx-1' }));
    const a = await ask('/answer', { 'x-keygate-answer': token });
    expect(a.status).toBe(direct.status);
    const [ab, db] = [await a.json(), await direct.json()];
    expect({ ...ab, meta: null }).toEqual({ ...db, meta: null });
    expect(a.headers.get('x-request-id')).toBe('req-nginx-1');
    expect(a.headers.get('x-ratelimit-ip-limit')).toBe('100');
  });

  it('passes a 2xx answered by keygate itself (the rate-limit status route) through the token too', async () => {
    const r = await ask(
      '/auth',
      nginx('GET', '/v2/workspaces/100/rate-limit', { authorization: `Bearer ${K.wsAdmin}` }),
    );
    expect(r.status).toBe(401);
    const a = await ask('/answer', { 'x-keygate-answer': r.headers.get('x-keygate-answer')! });
    expect(a.status).toBe(200);
    expect((await a.json()).data).toBeDefined();
  });

  it('allows as 200 with the fields nginx copies with auth_request_set', async () => {
    const r = await ask('/auth', nginx('GET', '/v2/workspaces/100/tags', { authorization: `Bearer ${K.wsAdmin}` }));
    expect(r.status).toBe(200);
    expect(r.headers.get('x-gateway-signature')).toMatch(/^unsigned-body:[0-9a-f]{64}$/);
    expect(r.headers.get('x-keygate-answer')).toBeNull();
  });

  it('answers a tampered, forged or missing token 400 and spends nothing', async () => {
    clock.advance(60_000);
    const r = await ask('/auth', nginx('GET', '/v2/workspaces/100/nothing', { authorization: `Bearer ${K.wsViewer}` }));
    const token = r.headers.get('x-keygate-answer')!;
    const before = await remaining(K.wsViewer);
    const [payload, mac] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ status: 200, fields: [], body: '' })).toString('base64url');
    const flipped = payload.slice(0, -1) + (payload.endsWith('A') ? 'B' : 'A');
    for (const bad of [`${flipped}.${mac}`, `${forged}.${mac}`, `${payload}.${'0'.repeat(64)}`, 'garbage', '']) {
      const a = await ask('/answer', bad === '' ? {} : { 'x-keygate-answer': bad });
      expect(a.status).toBe(400);
      expect((await a.json()).error.code).toBe('invalid_request');
    }
    const after = await remaining(K.wsViewer);
    // The status route reads without spending: the bucket is as it was, less nothing.
    expect(after.data).toEqual(before.data);
  });
});

describe('/envoy/... (Envoy HTTP external authorization)', () => {
  it('decides the path after the prefix with the request’s own method', async () => {
    clock.advance(60_000);
    const ok = await ask('/envoy/v2/workspaces/100/tags?x=1', {
      authorization: `Bearer ${K.wsAdmin}`,
      'x-forwarded-for': '10.20.0.3',
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-ratelimit-remaining')).toBe('19');
    const no = await ask('/envoy/v2/workspaces/100/tags', { authorization: `Bearer ${K.wsViewer}` }, 'DELETE');
    expect(no.status).toBe(404);
    const v1 = await ask('/envoy/v1/email-accounts', { 'x-api-key': K.partner });
    expect(v1.status).toBe(200);
    expect(v1.headers.get('x-gateway-identity')).not.toBeNull();
  });
});

describe('the listener itself', () => {
  it('is bounded as the gateway’s listener: slow heads, idle connections, its share of descriptors', () => {
    const srv = createDecisionServer(s.app.gatewayDeps!);
    expect(srv.headersTimeout).toBe(10_000);
    expect(srv.keepAliveTimeout).toBe(65_000);
    expect(srv.requestTimeout).toBe(20_000);
    expect(srv.maxConnections).toBe(defaultBounds(descriptorLimit()).gateway.max);
  });

  it('ignores a body the subrequest carries (Envoy with_request_body) and serves the connection on', async () => {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${K.wsAdmin}` };
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${url}/envoy/v2/workspaces/100/tags`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'x'.repeat(100_000) }),
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('10');
      await r.text();
    }
  });

  it('closes the connection after a subrequest that announced a body it never sent', async () => {
    // Without the close, the next request's first bytes would be read as the missing body.
    const { port } = new URL(url);
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (b) => (text += b.toString('latin1')));
    const ended = new Promise<void>((done) => socket.on('close', () => done()));
    socket.write(
      'GET /auth HTTP/1.1\r\nHost: decision\r\nContent-Length: 10\r\nX-Forwarded-Method: GET\r\n' +
        `X-Forwarded-Uri: /v2/workspaces/100/tags\r\nAuthorization: Bearer ${K.wsAdmin}\r\n\r\n`,
    );
    await ended;
    // One answer, the decision's, closing the connection itself (not a 408 at the request timeout).
    expect(text.startsWith('HTTP/1.1 200')).toBe(true);
    expect(text.split('HTTP/1.1 ').length).toBe(2);
    expect(text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase()).toContain('connection: close');
  });

  it('answers /healthz and 404s elsewhere in Envelope B', async () => {
    const h = await ask('/healthz', {});
    expect([h.status, await h.text()]).toEqual([200, 'ok']);
    const n = await ask('/elsewhere', {});
    expect(n.status).toBe(404);
    expect((await n.json()).error.code).toBe('not_found');
  });

  it('answers a malformed head with a bare 400 and keeps serving', async () => {
    const { hostname, port } = new URL(url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = rawRequest({ host: hostname, port, path: '/auth', headers: { 'x-original-uri': '/v2\u0001' } });
      req.on('response', (r) => resolve(r.statusCode ?? 0)).on('error', reject);
      req.end();
    }).catch(() => 400);
    expect(status).toBe(400);
    expect((await ask('/healthz', {})).status).toBe(200);
  });
});

describe('a described HEAD', () => {
  it('is answered with its fields and no body, whether the proxy asks by GET or by HEAD', async () => {
    const t = await ask('/auth', traefik('HEAD', '/v2/workspaces/100/tags'));
    expect(t.status).toBe(401);
    expect(await t.text()).toBe('');
    expect(t.headers.get('x-ratelimit-ip-limit')).toBe('100');
    const n = await ask('/auth', nginx('HEAD', '/v2/workspaces/100/tags'));
    const a = await ask('/answer', { 'x-keygate-answer': n.headers.get('x-keygate-answer')! });
    expect([a.status, await a.text()]).toEqual([401, '']);
    const e = await ask('/envoy/v2/workspaces/100/tags', {}, 'HEAD');
    expect(e.status).toBe(401);
    // Asked by HEAD (Envoy), the answer declares the length of the body a GET would get, as the gateway's does.
    expect(Number(e.headers.get('content-length'))).toBeGreaterThan(0);
  });
});

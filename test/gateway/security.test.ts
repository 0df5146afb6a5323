// What must never reach the upstream: spoofed identities, unauthorized paths, client credentials.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K } from '../fixtures/seed.js';

/** A request with the path exactly as written (fetch would normalize `..`). */
function raw(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const u = new URL(base);
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () =>
        res.complete
          ? resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : null })
          : reject(new Error('incomplete')),
      );
      res.on('error', reject);
      res.on('aborted', () => reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const clock = new FakeClock();
let s: Stack;
let untrusted: Stack;
let rec: Recorder;
beforeAll(async () => {
  rec = await startRecorder();
  s = await startStack({ clock, mode: 'gateway', upstreamUrl: rec.url, env: { BODY_LIMIT_BYTES: '1024' } });
  untrusted = await startStack({
    clock,
    db: s.db,
    mode: 'gateway',
    upstreamUrl: rec.url,
    env: { TRUST_PROXY: '10.0.0.0/8' },
  });
});
afterAll(async () => {
  await untrusted?.close();
  await s?.close();
  await rec?.close();
});

const auth = { authorization: `Bearer ${K.wsAdmin}` };

describe('canonical paths (step 1)', () => {
  const bad = [
    '/v2/workspaces/100/accounts/../../101/accounts',
    '/v2/workspaces/100/./accounts',
    '/v2/workspaces/100/%2e%2e/101/accounts',
    '/v2/workspaces/100%2F..%2F101/accounts',
    '/v2/workspaces/100/accounts%2f5000',
    '/v2/workspaces/100/accounts%5C5000',
    '/v2/workspaces/100//accounts',
    '/v2/workspaces/100/accounts/',
    '/v2/workspaces/01/accounts',
    '/v2/workspaces/1e3/accounts',
    '/v2/workspaces/-1/accounts',
    '/v2/workspaces/+100/accounts',
    '/v2/workspaces/12345678901234567890/accounts',
    '/v2/workspaces/100/accounts/%zz',
  ];
  it.each(bad)('%s is 400 invalid_request in Envelope B and never forwarded', async (path) => {
    const before = rec.seen.length;
    const r = await raw(s.gatewayUrl, 'GET', path, auth);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
    expect(r.body.meta.request_id).toBe(r.headers['x-request-id']);
    expect(r.headers['x-ratelimit-ip-limit']).toBe('100');
    expect(rec.seen.length).toBe(before);
  });

  it('an unknown route is 404 Envelope B, never forwarded', async () => {
    const before = rec.seen.length;
    const r = await raw(s.gatewayUrl, 'DELETE', '/v2/workspaces/100/tags', auth);
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
    expect(rec.seen.length).toBe(before);
  });

  it('a body over the limit is 413 payload_too_large, never forwarded', async () => {
    const before = rec.seen.length;
    const r = await raw(
      s.gatewayUrl,
      'POST',
      '/v2/workspaces/100/tags',
      { ...auth, 'content-type': 'application/json' },
      JSON.stringify({ name: 'x'.repeat(2000) }),
    );
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('payload_too_large');
    expect(rec.seen.length).toBe(before);
  });

  it('a chunked body over the limit is 413 too', async () => {
    const u = new URL(s.gatewayUrl);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: u.port, method: 'POST', path: '/v2/workspaces/100/tags', headers: auth },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 10; i++) req.write('x'.repeat(200));
      req.end();
    });
    expect(status).toBe(413);
  });
});

describe('forwarding', () => {
  it('strips client credentials and X-Gateway-* headers, signs its own identity, forwards the exact path', async () => {
    clock.advance(60_000);
    const before = rec.seen.length;
    const forged = Buffer.from(JSON.stringify({ keyId: 1, organizationId: 2, role: 'OWNER' })).toString('base64url');
    const r = await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/accounts?page=2&per_page=5', {
      ...auth,
      'x-api-key': K.partner,
      'x-gateway-identity': forged,
      'x-gateway-signature': 'f'.repeat(64),
      'x-gateway-timestamp': '1',
      'x-gateway-extra': 'x',
      'x-request-id': 'client-id-1',
      cookie: 'session=abc',
    });
    expect(r.status).toBe(200);
    expect(r.headers['x-request-id']).toBe('client-id-1');
    const f = rec.seen[before];
    expect(f.url).toBe('/v2/workspaces/100/accounts?page=2&per_page=5');
    expect(f.headers.authorization).toBeUndefined();
    expect(f.headers['x-api-key']).toBeUndefined();
    expect(f.headers.cookie).toBeUndefined();
    expect(f.headers['x-gateway-extra']).toBeUndefined();
    expect(f.headers['x-gateway-identity']).not.toBe(forged);
    const id = JSON.parse(Buffer.from(f.headers['x-gateway-identity'] as string, 'base64url').toString());
    expect(id).toEqual({
      keyId: 1000,
      keyType: 'workspace',
      organizationId: 1,
      userId: null,
      workspaceId: 100,
      role: 'ADMIN',
      scopes: expect.arrayContaining(['accounts:read']),
      plan: 'growth',
    });
    expect(f.headers['x-request-id']).toBe('client-id-1');
    expect(JSON.stringify(f.headers)).not.toContain(K.wsAdmin);
  });

  it('replaces an invalid X-Request-Id with its own', async () => {
    const r = await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/tags', {
      ...auth,
      'x-request-id': 'bad id with spaces',
    });
    expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a personal key acts at the live membership role', async () => {
    const before = rec.seen.length;
    await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/tags', { authorization: `Bearer ${K.editorPk}` });
    const id = JSON.parse(
      Buffer.from(rec.seen[before].headers['x-gateway-identity'] as string, 'base64url').toString(),
    );
    expect(id).toMatchObject({ keyType: 'personal', userId: 11, workspaceId: 100, role: 'EDITOR' });
  });

  it('one personal key in two workspaces: each request carries the identity of its own grant', async () => {
    // The encoded identity is kept per principal and grant (src/gateway/identity-headers.ts): the first
    // grant in a small record, a second one moves both into a map; none may answer for another.
    const idOf = async (path: string) => {
      const before = rec.seen.length;
      const r = await raw(s.gatewayUrl, 'GET', path, { authorization: `Bearer ${K.ownerPk}` });
      expect(r.status).toBe(200);
      return JSON.parse(Buffer.from(rec.seen[before].headers['x-gateway-identity'] as string, 'base64url').toString());
    };
    const order = [100, 101, 100, 101, 100];
    for (const ws of order)
      expect(await idOf(`/v2/workspaces/${ws}/tags`)).toMatchObject({
        keyType: 'personal',
        userId: 10,
        workspaceId: ws,
        role: 'OWNER',
      });
  });

  it('a /v1 key is not a /v2 key (150002), and a /v2 key is not a /v1 key', async () => {
    const v2 = await raw(
      s.gatewayUrl,
      'GET',
      '/v2/workspaces/100/tags',
      { authorization: `Bearer ${K.partner}` },
      undefined,
    );
    expect(v2.body.errorCode).toBe('150002');
    const v1 = await raw(s.gatewayUrl, 'GET', '/v1/email-accounts', { 'x-api-key': K.wsAdmin });
    expect(v1.status).toBe(401);
    expect(v1.body.error_code).toBe('unauthorized');
  });
});

describe('client IP', () => {
  it('X-Forwarded-For from an untrusted peer is ignored: the socket address is the client', async () => {
    clock.advance(60_000);
    const before = rec.seen.length;
    const a = await raw(untrusted.gatewayUrl, 'GET', '/v2/workspaces/100/tags', {
      ...auth,
      'x-forwarded-for': '1.1.1.1',
    });
    const b = await raw(untrusted.gatewayUrl, 'GET', '/v2/workspaces/100/tags', {
      ...auth,
      'x-forwarded-for': '2.2.2.2',
    });
    expect(Number(a.headers['x-ratelimit-ip-remaining']) - Number(b.headers['x-ratelimit-ip-remaining'])).toBe(1);
    expect(rec.seen[before].headers['x-forwarded-for']).toBe('1.1.1.1, 127.0.0.1');
  });

  it('from a trusted peer the right-most untrusted address is the client; a malformed header falls back', async () => {
    clock.advance(60_000);
    const before = rec.seen.length;
    const a = await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/tags', {
      ...auth,
      'x-forwarded-for': '9.9.9.9, 3.3.3.3, 127.0.0.1',
    });
    expect(a.headers['x-ratelimit-ip-remaining']).toBe('99');
    expect(rec.seen[before].headers['x-forwarded-for']).toBe('9.9.9.9, 3.3.3.3, 127.0.0.1, 3.3.3.3');
    const b = await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/tags', { ...auth, 'x-forwarded-for': '3.3.3.3' });
    expect(b.headers['x-ratelimit-ip-remaining']).toBe('98');
    const c = await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/tags', {
      ...auth,
      'x-forwarded-for': 'not-an-ip, 3.3.3.3',
    });
    expect(c.headers['x-ratelimit-ip-remaining']).toBe('99'); // counted for 127.0.0.1
  });
});

describe('upstream failures', () => {
  it('a stalled upstream is 504 gateway_timeout, a reset is 502 bad_gateway, with the rate-limit headers', async () => {
    const slow = await startStack({
      clock,
      db: s.db,
      mode: 'gateway',
      upstreamUrl: rec.url,
      env: { UPSTREAM_TIMEOUT_MS: '200' },
    });
    try {
      rec.mode = 'stall';
      const t = await raw(slow.gatewayUrl, 'GET', '/v2/workspaces/100/tags', auth);
      expect(t.status).toBe(504);
      expect(t.body.error.code).toBe('gateway_timeout');
      expect(t.headers['x-ratelimit-limit']).toBe('20');
      rec.mode = 'reset';
      const r = await raw(slow.gatewayUrl, 'GET', '/v2/workspaces/100/tags', auth);
      expect(r.status).toBe(502);
      expect(r.body.error.code).toBe('bad_gateway');
    } finally {
      rec.mode = 'answer';
      await slow.close();
    }
  });

  it('garbage from the upstream is 502 bad_gateway; a reset mid-response closes the client connection', async () => {
    try {
      rec.mode = 'garbage';
      const g = await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/tags', auth);
      expect(g.status).toBe(502);
      expect(g.body.error.code).toBe('bad_gateway');
      rec.mode = 'reset-mid-body';
      // The status line is already out: the only honest answer is to cut the connection, not hang.
      const t0 = performance.now();
      const r = await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/tags', auth).then(
        () => 'completed',
        (err: NodeJS.ErrnoException) => err.code ?? err.message,
      );
      expect(r).not.toBe('completed');
      expect(performance.now() - t0).toBeLessThan(5_000);
    } finally {
      rec.mode = 'answer';
    }
    // The gateway still serves afterwards.
    expect((await raw(s.gatewayUrl, 'GET', '/v2/workspaces/100/tags', auth)).status).toBe(200);
  });

  it('an unreachable upstream is 502 bad_gateway (v2 Envelope B, v1 shape)', async () => {
    const dead = await startStack({ clock, db: s.db, mode: 'gateway', upstreamUrl: 'http://127.0.0.1:1' });
    try {
      const r = await raw(dead.gatewayUrl, 'GET', '/v2/workspaces/100/tags', auth);
      expect(r.status).toBe(502);
      expect(r.body).toMatchObject({ error: { code: 'bad_gateway' }, meta: { request_id: r.headers['x-request-id'] } });
      const v1 = await raw(dead.gatewayUrl, 'GET', '/v1/dashboard', { 'x-api-key': K.partner });
      expect(v1.status).toBe(502);
      expect(v1.body.error_code).toBe('bad_gateway');
      expect(v1.headers['x-ratelimit-limit']).toBe('20');
    } finally {
      await dead.close();
    }
  });
});

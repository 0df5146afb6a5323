// Hostile clients and upstreams against the real gateway (docs/decisions.md sections 3 and 5, RFC 9110/9112):
// what is forwarded is exactly what was authorized and signed, every forwarded request is bounded in
// time, bodies are read only once a request is authorized, and the upstream cannot speak for the
// gateway's rate-limit headers.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { listenLocal } from '../helpers/listen.js';
import { TESTED_CLIENT } from './upstreams/forwarder-kit.js';

/** Raw bytes on a fresh socket; resolves with the whole answer text once the server closes or after `ms`. */
function rawExchange(
  base: string,
  bytes: Buffer | string,
  o: { ms?: number; keepOpen?: boolean } = {},
): Promise<{ text: string; closed: boolean; ms: number }> {
  const u = new URL(base);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname);
    let text = '';
    let settled = false;
    const done = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ text, closed, ms: performance.now() - t0 });
    };
    const timer = setTimeout(() => done(false), o.ms ?? 3000);
    sock.on('data', (c) => (text += c.toString('utf8')));
    sock.on('end', () => done(true));
    sock.on('close', () => done(true));
    sock.on('error', (err) => (settled ? undefined : reject(err)));
    sock.write(bytes);
  });
}

const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
const bodyOf = (text: string) => {
  const i = text.indexOf('\r\n\r\n');
  try {
    return JSON.parse(text.slice(i + 4));
  } catch {
    return null;
  }
};

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

/** An upstream that records every request and answers as the test says. */
async function startUpstream() {
  const seen: Seen[] = [];
  let behaviour: 'answer' | 'stall' | 'spoof-headers' = 'answer';
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString(),
      });
      if (behaviour === 'stall') return;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (behaviour === 'spoof-headers') {
        Object.assign(headers, {
          'x-ratelimit-limit': '999999',
          'x-ratelimit-remaining': '999999',
          'x-ratelimit-reset': '1',
          'x-ratelimit-ip-limit': '999999',
          'x-ratelimit-ip-remaining': '999999',
          'retry-after': '0',
          'x-request-id': 'upstream-invented',
          connection: 'x-secret-hop',
          'x-secret-hop': 'internal',
        });
      }
      res.writeHead(200, headers);
      res.end('{"data":{"upstream":true}}');
    });
  });
  // Requests stalled on purpose must not keep the test's close waiting.
  const { url } = await listenLocal(server);
  return {
    url,
    seen,
    set: (b: typeof behaviour) => (behaviour = b),
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

// One clock for both stacks (the backend of `full` verifies what `s` signed), moved a window on
// before each test so that no test spends another's rate-limit budget.
const clock = new FakeClock(Date.now());
beforeEach(() => clock.advance(60_000));
let up: Awaited<ReturnType<typeof startUpstream>>;
let s: Stack; // gateway alone, in front of the recording upstream
let full: Stack; // gateway and the real backend
beforeAll(async () => {
  up = await startUpstream();
  s = await startStack({
    clock,
    mode: 'gateway',
    upstreamUrl: up.url,
    env: {
      UPSTREAM_TIMEOUT_MS: '400',
      UPSTREAM_MAX_SOCKETS: '2',
      BODY_TIMEOUT_MS: '400',
      BODY_LIMIT_BYTES: '100000',
      BODY_BUFFER_MAX_BYTES: '150000',
      ...TESTED_CLIENT,
    },
  });
  full = await startStack({ clock, env: TESTED_CLIENT });
});
afterAll(async () => {
  await full?.close();
  await s?.close();
  await up?.close();
});

const host = () => new URL(s.gatewayUrl).host;
const bearer = `Authorization: Bearer ${K.wsAdmin}\r\n`;

describe('every forwarded request is bounded by UPSTREAM_TIMEOUT_MS', () => {
  it('Expect: 100-continue to a stalled upstream is answered 504 in time, and Expect is not forwarded', async () => {
    up.set('stall');
    try {
      const body = '{"name":"x"}';
      const r = await rawExchange(
        s.gatewayUrl,
        `POST /v2/workspaces/100/tags HTTP/1.1\r\nHost: ${host()}\r\n${bearer}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n${body}`,
        { ms: 3000 },
      );
      expect(r.text).toContain('504');
      expect(r.ms).toBeLessThan(2000);
      expect(up.seen.at(-1)?.headers.expect).toBeUndefined();
    } finally {
      up.set('answer');
    }
  });

  it('requests queued for a free upstream socket time out too, and the pool recovers', async () => {
    up.set('stall');
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        s.request('GET', '/v2/workspaces/100/tags', {
          key: K.wsAdmin,
          ip: `10.77.0.${Math.floor(Math.random() * 200)}`,
        }),
      ),
    );
    up.set('answer');
    expect(results.map((r) => r.status)).toEqual([504, 504, 504, 504, 504, 504]);
    expect(performance.now() - t0).toBeLessThan(2500);
    const after = await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.77.1.1' });
    expect(after.status).toBe(200);
  });
});

describe('the signed target is the forwarded target, byte for byte', () => {
  const queries = [
    "?search=o'brien",
    '?',
    '?search=%3Cb%3E',
    '?search=<b>',
    '?search="quoted"',
    '?search=a+b',
    '?search=100%',
    '?search=%zz',
    '?search=%E2%82%AC',
    '?search=a&search=b',
    '?search=`{|}^',
    '?search=a%20b',
    '?search=x?y=z',
    "?search=it's%2Fa",
  ];
  it.each(queries)('%s reaches the upstream unchanged', async (q) => {
    const target = `/v2/workspaces/100/accounts${q}`;
    const r = await rawExchange(
      s.gatewayUrl,
      Buffer.from(
        `GET ${target} HTTP/1.1\r\nHost: ${host()}\r\n${bearer}X-Forwarded-For: 10.78.0.${queries.indexOf(q)}\r\nConnection: close\r\n\r\n`,
        'utf8',
      ),
    );
    expect(statusOf(r.text)).toBe(200);
    expect(Buffer.from(up.seen.at(-1)!.url, 'latin1').toString('utf8')).toBe(target);
  });

  // RFC 9112 section 3.2: a request-target is ASCII; Node's parser refuses raw bytes above it.
  it.each(['?search=\u20ac', '?search=caf\u00e9'])(
    '%s, raw non-ASCII in the target, is 400 and never forwarded',
    async (q) => {
      const before = up.seen.length;
      const r = await rawExchange(
        s.gatewayUrl,
        Buffer.from(
          `GET /v2/workspaces/100/accounts${q} HTTP/1.1\r\nHost: ${host()}\r\n${bearer}Connection: close\r\n\r\n`,
          'utf8',
        ),
      );
      expect(statusOf(r.text)).toBe(400);
      expect(up.seen.length).toBe(before);
    },
  );

  it.each(queries)('%s is accepted by the real backend (never a 401 for a valid key)', async (q) => {
    const target = `/v2/workspaces/100/accounts${q}`;
    const r = await rawExchange(
      full.gatewayUrl,
      Buffer.from(
        `GET ${target} HTTP/1.1\r\nHost: x\r\n${bearer}X-Forwarded-For: 10.79.0.${queries.indexOf(q)}\r\nConnection: close\r\n\r\n`,
        'utf8',
      ),
    );
    expect(statusOf(r.text)).not.toBe(401);
    expect(statusOf(r.text)).toBeLessThan(500);
  });
});

describe('bodies are read only after authorization, bounded in time and in total', () => {
  it('a request without a key is refused at once, without waiting for its body, and its connection closed', async () => {
    const r = await rawExchange(
      s.gatewayUrl,
      `POST /v2/workspaces/100/tags HTTP/1.1\r\nHost: ${host()}\r\nContent-Type: application/json\r\nContent-Length: 90000\r\n\r\n{"name":`,
      { ms: 2000 },
    );
    expect(statusOf(r.text)).toBe(401);
    expect(bodyOf(r.text)?.errorCode).toBe('150001');
    expect(r.closed).toBe(true);
    expect(r.ms).toBeLessThan(1000);
  });

  it('a body slower than BODY_TIMEOUT_MS is refused with 408 and never forwarded', async () => {
    const before = up.seen.length;
    const r = await rawExchange(
      s.gatewayUrl,
      `POST /v2/workspaces/100/tags HTTP/1.1\r\nHost: ${host()}\r\n${bearer}X-Forwarded-For: 10.80.0.1\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"name":`,
      { ms: 2500 },
    );
    expect(statusOf(r.text)).toBe(408);
    expect(bodyOf(r.text)?.error?.code).toBe('request_timeout');
    expect(r.ms).toBeLessThan(2000);
    expect(up.seen.length).toBe(before);
  });

  it('the bytes held across all requests are bounded (BODY_BUFFER_MAX_BYTES): the request over it gets 503', async () => {
    // Two authorized uploads of 90,000 bytes that stall half-way hold 2 x 45,000; the third crosses 150,000.
    const half = 'x'.repeat(45_000);
    const open = (n: number) => {
      const sock = net.connect(Number(new URL(s.gatewayUrl).port), '127.0.0.1');
      sock.on('error', () => {});
      sock.write(
        `POST /v2/workspaces/100/tags HTTP/1.1\r\nHost: ${host()}\r\n${bearer}X-Forwarded-For: 10.81.0.${n}\r\nContent-Type: application/json\r\nContent-Length: 90000\r\n\r\n${half}`,
      );
      return sock;
    };
    const a = open(1);
    const b = open(2);
    await new Promise((r) => setTimeout(r, 150));
    const third = await rawExchange(
      s.gatewayUrl,
      `POST /v2/workspaces/100/tags HTTP/1.1\r\nHost: ${host()}\r\n${bearer}X-Forwarded-For: 10.81.0.3\r\nContent-Type: application/json\r\nContent-Length: 90000\r\n\r\n${half}${half}`,
      { ms: 2000 },
    );
    a.destroy();
    b.destroy();
    expect(statusOf(third.text)).toBe(503);
    expect(bodyOf(third.text)?.error?.code).toBe('service_unavailable');
  });
});

describe('a clean request upstream, and the gateway owns its headers (RFC 9110 section 7.6.1)', () => {
  it('strips underscore spellings, hop-by-hop headers, headers named in Connection, Upgrade and Proxy-Authorization', async () => {
    const r = await rawExchange(
      s.gatewayUrl,
      `GET /v2/workspaces/100/tags HTTP/1.1\r\nHost: ${host()}\r\n${bearer}X-Forwarded-For: 10.82.0.1\r\n` +
        'X_Api_Key: svc_v1_stolen\r\nX_Gateway_Identity: forged\r\nConnection: close, X-Hop-Secret\r\nX-Hop-Secret: s3cret\r\n' +
        'Keep-Alive: timeout=5\r\nUpgrade: websocket\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\nTE: trailers\r\nProxy-Connection: keep-alive\r\nX-Kept: yes\r\n\r\n',
    );
    expect(statusOf(r.text)).toBe(200);
    const h = up.seen.at(-1)!.headers;
    for (const name of [
      'x_api_key',
      'x_gateway_identity',
      'x-hop-secret',
      'keep-alive',
      'upgrade',
      'proxy-authorization',
      'te',
      'proxy-connection',
    ]) {
      expect(h[name], name).toBeUndefined();
    }
    expect(h['x-kept']).toBe('yes');
  });

  it('a GET or HEAD with a body is refused (400, Envelope B) and never forwarded', async () => {
    const before = up.seen.length;
    const r = await rawExchange(
      s.gatewayUrl,
      `GET /v2/workspaces/100/tags HTTP/1.1\r\nHost: ${host()}\r\n${bearer}X-Forwarded-For: 10.82.0.2\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`,
    );
    expect(statusOf(r.text)).toBe(400);
    expect(bodyOf(r.text)?.error?.code).toBe('invalid_request');
    expect(up.seen.length).toBe(before);
  });

  it('the upstream cannot overwrite X-RateLimit-*, Retry-After, X-Request-Id or pass its hop-by-hop headers', async () => {
    up.set('spoof-headers');
    try {
      const r = await s.request('GET', '/v2/workspaces/100/tags', {
        key: K.wsAdmin,
        ip: '10.82.0.3',
        headers: { 'x-request-id': 'client-id-1' },
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('20');
      expect(Number(r.headers.get('x-ratelimit-remaining'))).toBeLessThan(20);
      expect(r.headers.get('x-ratelimit-ip-limit')).toBe('100');
      expect(r.headers.get('retry-after')).toBeNull();
      expect(r.headers.get('x-request-id')).toBe('client-id-1');
      expect(r.headers.get('x-secret-hop')).toBeNull();
    } finally {
      up.set('answer');
    }
  });
});

describe('HTTP/1.1 edges (RFC 9112, RFC 9110 section 11.4)', () => {
  it('two Host lines are 400', async () => {
    const r = await rawExchange(
      s.gatewayUrl,
      `GET /v2/workspaces/100/tags HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n${bearer}Connection: close\r\n\r\n`,
    );
    expect(statusOf(r.text)).toBe(400);
  });

  it('an absolute-form target is treated as its path, and forwarded in origin form', async () => {
    const r = await rawExchange(
      s.gatewayUrl,
      `GET http://${host()}/v2/workspaces/100/tags?x=1 HTTP/1.1\r\nHost: ${host()}\r\n${bearer}X-Forwarded-For: 10.83.0.1\r\nConnection: close\r\n\r\n`,
    );
    expect(statusOf(r.text)).toBe(200);
    expect(up.seen.at(-1)!.url).toBe('/v2/workspaces/100/tags?x=1');
  });

  it('Bearer followed by several spaces is a valid credential', async () => {
    const r = await s.request('GET', '/v2/workspaces/100/tags', {
      ip: '10.83.0.2',
      headers: { authorization: `Bearer    ${K.wsAdmin}` },
    });
    expect(r.status).toBe(200);
  });
});

describe('the signature covers the body, and a signature is good once (RFC 9530 Content-Digest)', () => {
  it('a captured signed POST cannot be replayed, nor replayed with another body', async () => {
    const body = JSON.stringify({ name: `replay-${Date.now()}` });
    const r = await s.request('POST', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.84.0.1', body });
    expect(r.status).toBe(200);
    const captured = up.seen.at(-1)!;
    expect(captured.headers['content-digest']).toMatch(/^sha-256=:[A-Za-z0-9+/]+=*:$/);
    const replay = (b: string) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(captured.headers))
        if (typeof v === 'string' && k !== 'content-length' && k !== 'host') headers[k] = v;
      return fetch(full.backendUrl + captured.url, { method: 'POST', headers, body: b });
    };
    // The same secret signs for both stacks (test/helpers/stack.ts), so the backend of `full` verifies it.
    const other = JSON.stringify({ name: 'evil' });
    expect((await replay(other)).status).toBe(401); // another body: the digest does not match
    const first = await replay(body);
    expect(first.status).not.toBe(401); // the first delivery is good
    expect((await replay(body)).status).toBe(401); // the same signature again: a replay
  });
});

describe('the address layer counts a client, not a spelling (docs/decisions.md section 3, client IP)', () => {
  const ipRemaining = async (ip: string) =>
    Number(
      (await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip })).headers.get(
        'x-ratelimit-ip-remaining',
      ),
    );

  it('addresses of one IPv6 /64 share one budget', async () => {
    const first = await ipRemaining('2001:db8:5:6::1');
    expect(await ipRemaining('2001:db8:5:6:ffff:1:2:3')).toBe(first - 1);
    expect(await ipRemaining('2001:0db8:0005:0006:0:0:0:9')).toBe(first - 2);
    expect(await ipRemaining('2001:db8:5:7::1')).toBe(99); // the next /64 is another client
  });

  it('an IPv4-mapped IPv6 spelling is the IPv4 address', async () => {
    const first = await ipRemaining('10.85.0.1');
    expect(await ipRemaining('::ffff:10.85.0.1')).toBe(first - 1);
  });
});

// WebSocket through the gateway (issue 37; src/gateway/websocket.ts): an `Upgrade: websocket` request is
// authorized, limited and identified like any other, then tunnelled to a `ws` echo upstream; a refusal
// is an ordinary answer in the interface's envelope; a revoked key's tunnel closes with 1008 at its
// next re-check (driven by the injected clock); the drain's deadline closes tunnels with 1001.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import net from 'node:net';
import { createHash } from 'node:crypto';
import { WebSocket } from 'ws';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { closed, nextMessage, opened, refused, startWsEcho, type WsEcho } from '../helpers/ws-echo.js';
import { verifyHmacIdentity } from '../../src/verifier/index.js';
import { freePort } from '../helpers/redis-server.js';
import { listenLocal } from '../helpers/listen.js';
import { writeRoutesFile } from '../helpers/upstream-fleet.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RECHECK_MS = 200;
const clock = new FakeClock();
let s: Stack;
let echo: WsEcho;
let ipN = 0;
const freshIp = () => `10.37.0.${++ipN}`;

beforeAll(async () => {
  echo = await startWsEcho();
  s = await startStack({ clock, upstreamOverride: echo.url, env: { WEBSOCKET_RECHECK_MS: String(RECHECK_MS) } });
});
afterAll(async () => {
  await s?.close();
  await echo?.close();
});
beforeEach(() => {
  clock.advance(60_000);
  clock.setSecond(10);
});

const wsUrl = (st: Stack, path: string) => st.gatewayUrl.replace(/^http/, 'ws') + path;

function client(
  st: Stack,
  path: string,
  o: { key?: string; apiKey?: string; ip?: string; protocol?: string } = {},
): WebSocket {
  const headers: Record<string, string> = { 'x-forwarded-for': o.ip ?? freshIp() };
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  if (o.apiKey) headers['x-api-key'] = o.apiKey;
  return new WebSocket(wsUrl(st, path), o.protocol ? [o.protocol] : [], { headers });
}

/** The gateway's answers with status 101 so far, from its metrics. */
async function answered101(): Promise<number> {
  const text = await (await fetch(`${s.adminUrl}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('keygate_requests_total{') && line.includes('status="101"')) n += Number(line.split(' ').pop());
  return n;
}

/** A personal key of the owner (user 10) through /api-keys. */
async function mint(body: Record<string, unknown> = {}): Promise<{ id: number; secret: string }> {
  const r = await s.session('POST', '/api-keys', K.session, {
    name: 'ws',
    type: 'personal',
    scopes: ['workspace:read'],
    ...body,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { id: r.body.data.id, secret: r.body.data.secret };
}

describe('an admitted upgrade', () => {
  it('is tunnelled: messages echo both ways, and the 101 carries the request id and rate-limit fields', async () => {
    const before = await answered101();
    const ws = client(s, '/v2/workspaces/100', { key: K.wsAdmin, protocol: 'chat.v1' });
    const res = await opened(ws);
    expect(res.statusCode).toBe(101);
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers['x-ratelimit-limit']).toBe('20');
    expect(res.headers['x-ratelimit-remaining']).toBe('19');
    expect(ws.protocol).toBe('chat.v1');
    ws.send('hello');
    expect(await nextMessage(ws)).toBe('hello');
    const big = 'x'.repeat(200_000);
    ws.send(big);
    expect(await nextMessage(ws)).toBe(big);
    const done = closed(ws);
    ws.close(1000, 'bye');
    expect((await done).code).toBe(1000);
    // Counted once, as a 101, when it opened; not again when it closed.
    expect(await answered101()).toBe(before + 1);
  });

  it("reaches the upstream signed and identified, without the client credential, with the client's Host", async () => {
    const ip = freshIp();
    const before = echo.handshakes.length;
    const ws = client(s, '/v2/workspaces/100?x=1', { key: K.wsAdmin, ip });
    const res = await opened(ws);
    const req = echo.handshakes[before];
    expect(req.url).toBe('/v2/workspaces/100?x=1');
    expect(req.headers.authorization).toBeUndefined();
    expect(req.headers.host).toBe(new URL(s.gatewayUrl).host);
    expect(req.headers['x-request-id']).toBe(res.headers['x-request-id']);
    expect(req.headers['x-forwarded-for']).toContain(ip);
    expect(req.headers['sec-websocket-version']).toBe('13');
    const identity = await verifyHmacIdentity(
      s.gatewaySecret,
      { method: 'GET', target: req.url!, headers: req.headers },
      { now: () => clock.now() },
    );
    expect(identity.workspaceId).toBe(100);
    const done = closed(ws);
    ws.close();
    await done;
  });

  it("the upstream's refusal of the handshake is relayed, and the connection closed", async () => {
    const ws = client(s, '/v2/workspaces/100?deny=1', { key: K.wsAdmin });
    const r = await refused(ws);
    expect(r.status).toBe(403);
    expect(r.body).toBe('denied');
    expect(r.headers.connection).toBe('close');
    expect(r.headers['x-request-id']).toBeDefined();
  });
});

describe('either side going away', () => {
  it('a client that vanishes takes the upstream side with it, and one that vanishes upstream the client side', async () => {
    const ws = client(s, '/v2/workspaces/100', { key: K.wsAdmin });
    await opened(ws);
    const upstreamSide = echo.sockets[echo.sockets.length - 1];
    const upstreamClosed = new Promise<number>((r) => upstreamSide.once('close', (code) => r(code)));
    // No close frame, the connection simply gone.
    ws.terminate();
    expect(await upstreamClosed).toBe(1006);

    const again = client(s, '/v2/workspaces/100', { key: K.wsAdmin });
    await opened(again);
    const done = closed(again);
    echo.sockets[echo.sockets.length - 1].terminate();
    expect((await done).code).toBe(1006);

    // The gateway goes on serving.
    const third = client(s, '/v2/workspaces/100', { key: K.wsAdmin });
    await opened(third);
    third.send('still serving');
    expect(await nextMessage(third)).toBe('still serving');
    const end = closed(third);
    third.close();
    await end;
  });
});

describe('a refused upgrade is an ordinary answer on its socket', () => {
  it('without a key: 401 in Envelope A, with the request id and the address layer', async () => {
    const ws = client(s, '/v2/workspaces/100');
    const r = await refused(ws);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, data: null, errorCode: '150001' });
    expect(r.headers['x-request-id']).toBeDefined();
    expect(r.headers.connection).toBe('close');
  });

  it('over the key layer: 429 150005 with Retry-After and the rate-limit fields; nothing reaches the upstream', async () => {
    const ip = freshIp();
    for (let i = 0; i < 20; i++) {
      expect((await s.request('GET', '/v2/workspaces/100', { key: K.editorPk, ip })).status).toBe(200);
    }
    const before = echo.handshakes.length;
    const r = await refused(client(s, '/v2/workspaces/100', { key: K.editorPk, ip }));
    expect(r.status).toBe(429);
    expect(r.body.errorCode).toBe('150005');
    expect(r.headers['retry-after']).toBe('50');
    expect(r.headers['x-ratelimit-remaining']).toBe('0');
    expect(echo.handshakes.length).toBe(before);
  });

  it('/v1: a bad key is answered in the v1 envelope', async () => {
    const r = await refused(client(s, '/v1/campaigns', { apiKey: 'svc_v1_nope' }));
    expect(r.status).toBe(401);
    expect(r.body.error_code).toBe('unauthorized');
  });

  it('another Upgrade (h2c) is ignored: the request is served as HTTP/1.1 and its connection closed', async () => {
    const answer = await rawExchange(
      s,
      'GET /v2/workspaces/100 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body).toMatchObject({ success: false, errorCode: '150001' });
  });

  it('another Upgrade with a body is refused 400 in Envelope B, naming the rule', async () => {
    const answer = await rawExchange(
      s,
      'POST /v2/workspaces/100/tags HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\n{}',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.message).toContain('websocket');
  });
});

describe('revocation while open', () => {
  it('a key revoked through the backend closes its tunnel with 1008 at the next re-check, the upstream too', async () => {
    const key = await mint();
    const ws = client(s, '/v2/workspaces/100', { key: key.secret });
    await opened(ws);
    ws.send('still here');
    expect(await nextMessage(ws)).toBe('still here');
    const upstreamSide = echo.sockets[echo.sockets.length - 1];
    const upstreamClosed = new Promise<number>((r) => upstreamSide.once('close', (code) => r(code)));
    // Re-checks before the revocation keep it open.
    clock.advance(RECHECK_MS);
    ws.send('after a re-check');
    expect(await nextMessage(ws)).toBe('after a re-check');
    const done = closed(ws);
    expect((await s.session('DELETE', `/api-keys/${key.id}`, K.session)).status).toBe(200);
    clock.advance(RECHECK_MS);
    const c = await done;
    expect(c.code).toBe(1008);
    expect(c.reason).toContain('revoked');
    expect(await upstreamClosed).toBe(1008);
  });

  it('a key that expires while open is closed at the first re-check after its expiry', async () => {
    const expiresAt = clock.now() + 10 * RECHECK_MS;
    const key = await mint({ expiresAt: new Date(expiresAt).toISOString() });
    const ws = client(s, '/v2/workspaces/100', { key: key.secret });
    await opened(ws);
    const done = closed(ws);
    ws.send('before expiry');
    expect(await nextMessage(ws)).toBe('before expiry');
    // The instant of expiry, a re-check being due by then: the resolver finds the secret expired.
    clock.t = expiresAt;
    const c = await done;
    expect(c.code).toBe(1008);
    expect(c.reason).toContain('revoked');
  });

  it('an organization paused while open closes it too (no longer admitted)', async () => {
    const ws = client(s, '/v2/workspaces/101', { key: K.wsOther });
    await opened(ws);
    const done = closed(ws);
    await s.internal('PATCH', '/internal/organizations/1', { paused: true });
    try {
      clock.advance(RECHECK_MS);
      const c = await done;
      expect(c.code).toBe(1008);
    } finally {
      await s.internal('PATCH', '/internal/organizations/1', { paused: false });
    }
  });
});

describe('an unreachable upstream', () => {
  it('is a 502 in the envelope', async () => {
    const port = await freePort();
    const other = await startStack({
      clock,
      db: s.db,
      stores: s.stores,
      mode: 'gateway',
      upstreamUrl: `http://127.0.0.1:${port}`,
    });
    try {
      const r = await refused(client(other, '/v2/workspaces/100', { key: K.wsAdmin }));
      expect(r.status).toBe(502);
      expect(r.body.error.code).toBe('bad_gateway');
    } finally {
      await other.close();
    }
  });
});

describe('a service of its own (ROUTES_FILE)', () => {
  it('a target refusing connections is passed over for the next, and stripPrefix and the base path apply to the handshake', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kg-ws-'));
    const routesFile = join(dir, 'routes.json');
    const dead = `http://127.0.0.1:${await freePort()}`;
    writeRoutesFile(
      routesFile,
      {
        chat: {
          targets: [dead, `${echo.url}/base`],
          balance: 'round-robin',
          stripPrefix: '/v2',
          retries: { attempts: 1 },
        },
      },
      (r) => (r.method === 'GET' && r.path === '/v2/workspaces/{workspaceId}' ? 'chat' : undefined),
    );
    const other = await startStack({
      clock,
      db: s.db,
      stores: s.stores,
      mode: 'gateway',
      upstreamUrl: echo.url,
      env: { ROUTES_FILE: routesFile },
    });
    try {
      // Round robin: every other handshake tries the dead target first, and reaches the live one next.
      for (let i = 0; i < 4; i++) {
        const before = echo.handshakes.length;
        const ws = client(other, '/v2/workspaces/100?n=' + i, { key: K.wsAdmin });
        await opened(ws);
        const req = echo.handshakes[before];
        expect(req.url).toBe(`/base/workspaces/100?n=${i}`);
        // The signature covers the target the service receives, before the target's own base path.
        await verifyHmacIdentity(
          s.gatewaySecret,
          { method: 'GET', target: `/workspaces/100?n=${i}`, headers: req.headers },
          { now: () => clock.now() },
        );
        ws.send('via chat');
        expect(await nextMessage(ws)).toBe('via chat');
        const done = closed(ws);
        ws.close();
        await done;
      }
    } finally {
      await other.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the drain, and the bound on tunnels', () => {
  it("past WEBSOCKET_MAX_TUNNELS an upgrade is answered 503; at the drain's deadline a tunnel gets 1001 both ways, after the frame in flight", async () => {
    const upstream = await startHalfFrameUpstream(1000);
    // An instance of its own (the same database and stores), drained here instead of closed.
    const other = await startStack({
      clock,
      db: s.db,
      stores: s.stores,
      mode: 'gateway',
      upstreamUrl: upstream.url,
      env: { WEBSOCKET_MAX_TUNNELS: '1' },
    });
    try {
      const ws = client(other, '/v2/workspaces/100', { key: K.wsAdmin });
      const message = nextMessage(ws);
      await opened(ws);
      const over = await refused(client(other, '/v2/workspaces/100', { key: K.wsAdmin }));
      expect(over.status).toBe(503);
      expect(over.body.error.code).toBe('service_unavailable');
      expect(over.headers['retry-after']).toBeDefined();
      const done = closed(ws);
      const drained = other.app.close(50);
      // The upstream finishes its frame only once the gateway's close reached it: the client still gets
      // the whole message, then the close.
      expect(await upstream.closeCode).toBe(1001);
      expect((await message).length).toBe(1000);
      expect((await done).code).toBe(1001);
      await drained;
    } finally {
      await upstream.close();
    }
  });
});

/**
 * A WebSocket upstream by hand: it accepts the handshake, sends the first half of a binary message of
 * `size` bytes, and the rest only once a close frame reaches it (whose code `closeCode` resolves to).
 */
async function startHalfFrameUpstream(size: number) {
  let gotClose: (code: number) => void = () => {};
  const closeCode = new Promise<number>((r) => (gotClose = r));
  const sockets = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('error', () => {});
    let head = '';
    let open = false;
    const frame = Buffer.concat([Buffer.from([0x82, 126, size >> 8, size & 0xff]), Buffer.alloc(size, 7)]);
    sock.on('data', (chunk: Buffer) => {
      if (!open) {
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        open = true;
        const key = /sec-websocket-key: *(\S+)/i.exec(head)![1];
        const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
        sock.write(
          `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
        );
        sock.write(frame.subarray(0, 500));
        return;
      }
      // A client's close frame: opcode 8, masked; its code is the first two payload bytes, unmasked.
      if ((chunk[0] & 0x0f) !== 8) return;
      gotClose(((chunk[6] ^ chunk[2]) << 8) | (chunk[7] ^ chunk[3]));
      sock.end(frame.subarray(500));
    });
  });
  const { url } = await listenLocal(server);
  return {
    url,
    closeCode,
    close: () => {
      for (const sock of sockets) sock.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Send `text` on a plain connection to the gateway and read until it closes. */
function rawExchange(st: Stack, text: string): Promise<string> {
  const url = new URL(st.gatewayUrl);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(url.port), url.hostname, () => sock.write(text));
    let got = '';
    sock.setEncoding('latin1');
    sock.on('data', (c: string) => (got += c));
    sock.on('close', () => resolve(got));
    sock.on('error', reject);
  });
}

// The forwarder on its own (src/gateway/upstream-client.ts, undici's dispatch API): what a proxy must relay
// faithfully besides the simple case the other gateway tests drive: repeated fields, interim answers,
// a large body to a slow reader (backpressure), a status text, HEAD, and the failures before a head.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwarder, type Forwarder, type UpstreamFailure } from '../../src/gateway/upstream-client.js';
import { listenLocal } from '../helpers/listen.js';
import { CLIENTS } from './upstreams/forwarder-kit.js';

const BIG = Buffer.alloc(8 * 1024 * 1024, 'x');

async function listen(server: http.Server | net.Server): Promise<string> {
  return (await listenLocal(server)).url;
}

describe.each(CLIENTS)('forwarder (UPSTREAM_CLIENT=%s)', (client) => {
  let upstream: http.Server;
  let front: http.Server;
  let frontUrl: string;
  let forwarder: Forwarder;
  let upstreamUrl: string;
  const failures: UpstreamFailure[] = [];

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      if (req.url === '/cookies') {
        res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; Path=/']);
        res.setHeader('x-multi', ['one', 'two']);
        return void res.end('ok');
      }
      if (req.url === '/early-hints') {
        res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
        return void setTimeout(() => res.end('final'), 20);
      }
      if (req.url === '/big') {
        res.writeHead(200, { 'content-length': BIG.length });
        return void res.end(BIG);
      }
      if (req.url === '/teapot') {
        res.statusMessage = 'Short And Stout';
        res.statusCode = 418;
        return void res.end();
      }
      if (req.url === '/stall') return; // never answers
      if (req.url === '/stall-body') {
        res.writeHead(200, { 'content-length': 100 });
        return void res.write('only part of it'); // then silence
      }
      res.end(`${req.method} ${req.url}`);
    });
    upstreamUrl = await listen(upstream);
    forwarder = createForwarder({ upstream: upstreamUrl, timeoutMs: 300, maxSockets: 4, client });
    front = http.createServer((req, res) => {
      forwarder.forward(
        {
          method: req.method!,
          target: req.url!,
          headers: { host: req.headers.host },
          body: null,
          head: ['x-request-id', 'r1'],
        },
        res,
        (kind) => {
          failures.push(kind);
          res.writeHead(kind === 'gateway_timeout' ? 504 : 502).end(kind);
        },
      );
    });
    frontUrl = await listen(front);
  });
  afterAll(async () => {
    await forwarder.close();
    front.closeAllConnections();
    upstream.closeAllConnections();
    await new Promise((r) => front.close(r));
    await new Promise((r) => upstream.close(r));
  });

  const get = (path: string, method = 'GET') =>
    new Promise<{ status: number; statusText: string; raw: string[]; body: Buffer }>((resolve, reject) => {
      http
        .request(frontUrl + path, { method, agent: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              statusText: res.statusMessage!,
              raw: res.rawHeaders,
              body: Buffer.concat(chunks),
            }),
          );
        })
        .on('error', reject)
        .end();
    });

  it('relays every line of a repeated field, each on its own', async () => {
    const r = await get('/cookies');
    const lines = (name: string) => r.raw.filter((_, i) => i % 2 === 0 && r.raw[i].toLowerCase() === name).length;
    expect(lines('set-cookie')).toBe(2);
    expect(r.raw).toContain('a=1; Path=/');
    expect(r.raw).toContain('b=2; Path=/');
    expect(r.body.toString()).toBe('ok');
    // The gateway's own fields are written with the upstream's.
    expect(r.raw[r.raw.findIndex((v) => v.toLowerCase() === 'x-request-id') + 1]).toBe('r1');
  });

  it('skips an interim 103 and relays the final answer', async () => {
    const r = await get('/early-hints');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('final');
  });

  it('streams a large body to a client that reads slowly, complete', async () => {
    // A forwarder of its own with a silence bound far above any pause here: this test is about the
    // pauses and resumptions of backpressure, and the shared one's 300 ms bound (for the 504 tests)
    // can elapse on a loaded machine while this process's loop, client included, is held up.
    const patient = createForwarder({ upstream: upstreamUrl, timeoutMs: 10_000, maxSockets: 1, client });
    const slowFront = http.createServer((req, res) =>
      patient.forward(
        { method: 'GET', target: req.url!, headers: { host: req.headers.host }, body: null, head: [] },
        res,
        (kind) => res.writeHead(502).end(kind),
      ),
    );
    const slowUrl = (await listenLocal(slowFront)).url;
    try {
      const body = await new Promise<number>((resolve, reject) => {
        http
          .get(slowUrl + '/big', { agent: false }, (res) => {
            let n = 0;
            res.on('data', (c: Buffer) => {
              n += c.length;
              // A slow reader: the gateway's socket buffer fills and the upstream must be paused.
              res.pause();
              setTimeout(() => res.resume(), 1);
            });
            res.on('end', () => resolve(n));
            res.on('aborted', () => reject(new Error(`answer cut after ${n} bytes`)));
          })
          .on('error', reject);
      });
      expect(body).toBe(BIG.length);
    } finally {
      await patient.close();
      slowFront.closeAllConnections();
      await new Promise((r) => slowFront.close(r));
    }
  });

  it('keeps the upstream status text, and answers HEAD without a body', async () => {
    const r = await get('/teapot');
    expect(r.status).toBe(418);
    expect(r.statusText).toBe('Short And Stout');
    const h = await get('/big', 'HEAD');
    expect(h.status).toBe(200);
    expect(h.body.length).toBe(0);
  });

  it('answers 504 through onFail when the upstream is silent, and keeps serving', async () => {
    const r = await get('/stall');
    expect(r.status).toBe(504);
    expect(failures).toContain('gateway_timeout');
    expect((await get('/after')).body.toString()).toBe('GET /after');
  });

  it('closes the client connection when the upstream falls silent in the middle of a body', async () => {
    const started = performance.now();
    const outcome = await new Promise<string>((resolve) => {
      http
        .get(frontUrl + '/stall-body', { agent: false }, (res) => {
          res.on('data', () => {});
          res.on('end', () => resolve('ended'));
          res.on('error', () => resolve('aborted'));
          res.on('aborted', () => resolve('aborted'));
        })
        .on('error', () => resolve('aborted'));
    });
    expect(outcome).toBe('aborted'); // the head was sent: closing is the only honest answer
    const ms = performance.now() - started;
    expect(ms).toBeGreaterThanOrEqual(250); // the silence bound (300 ms), not at once
    expect(ms).toBeLessThan(2_000);
  });

  it('answers 502 through onFail when the upstream cannot be reached', async () => {
    const closed = net.createServer();
    const url = await listen(closed);
    await new Promise((r) => closed.close(r));
    const lost = createForwarder({ upstream: url, timeoutMs: 1000, maxSockets: 1, client });
    const kind = await new Promise<UpstreamFailure>((resolve) => {
      const res = new http.ServerResponse(new http.IncomingMessage(new net.Socket()));
      lost.forward({ method: 'GET', target: '/', headers: {}, body: null, head: [] }, res, resolve);
    });
    await lost.close();
    expect(kind).toBe('bad_gateway');
  });
});

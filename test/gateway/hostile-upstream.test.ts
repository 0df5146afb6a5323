// An upstream that does not speak HTTP as it should, over each upstream client (src/gateway/upstreams/
// lean-pool.ts, the default, and undici's Pool): bytes that are not an answer, a head over node's
// bound, a Content-Length beside Transfer-Encoding (a smuggling shape), a second answer nobody asked
// for, and the framings an answer may legally use (chunked with trailers, read until the close). A broken
// answer is a 502 through the forwarder's failure path, never relayed half-read, never a crash, and the
// next request on the same forwarder is served.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwarder, type Forwarder, type UpstreamFailure } from '../../src/gateway/upstream-client.js';
import { listenLocal } from '../helpers/listen.js';
import { CLIENTS } from './upstreams/forwarder-kit.js';

const OK = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok';

/** What the raw upstream writes for each path; a function writes on its own (and may close). */
const ANSWERS: Record<string, string | ((socket: net.Socket) => void)> = {
  '/ok': OK,
  '/garbage': 'HELLO THERE\r\n\r\n',
  '/huge-head': `HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(100_000)}\r\ncontent-length: 2\r\n\r\nok`,
  '/cl-and-te': 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n',
  '/bad-length': 'HTTP/1.1 200 OK\r\ncontent-length: 2x\r\n\r\nok',
  // The second answer's body is not all there: a connection reused after it would read the next
  // request's answer as the rest of it.
  '/twice': `${OK}HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nex`,
  '/chunked': (socket) => {
    socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-sum\r\n\r\n5\r\nhello\r\n');
    setTimeout(() => socket.write('6\r\n world\r\n0\r\nx-sum: 11\r\n\r\n'), 10);
  },
  '/until-close': (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of ');
    setTimeout(() => socket.end('it'), 10);
  },
  '/cut-body': (socket) => {
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part');
    setTimeout(() => socket.destroy(), 10);
  },
};

describe.each(CLIENTS)('an upstream that breaks HTTP (UPSTREAM_CLIENT=%s)', (client) => {
  let upstream: net.Server;
  let front: http.Server;
  let frontUrl: string;
  let forwarder: Forwarder;
  const failures: UpstreamFailure[] = [];

  beforeAll(async () => {
    upstream = net.createServer((socket) => {
      let buffered = '';
      socket.on('error', () => {});
      socket.on('data', (chunk) => {
        buffered += chunk.toString('latin1');
        // One request at a time: its head is all there is (no bodies here).
        for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
          const path = buffered.slice(0, end).split(' ')[1];
          buffered = buffered.slice(end + 4);
          const answer = ANSWERS[path] ?? OK;
          if (typeof answer === 'string') socket.write(answer);
          else answer(socket);
        }
      });
    });
    const upstreamUrl = (await listenLocal(upstream)).url;
    forwarder = createForwarder({ upstream: upstreamUrl, timeoutMs: 2_000, maxSockets: 2, client });
    front = http.createServer((req, res) =>
      forwarder.forward(
        { method: 'GET', target: req.url!, headers: { host: req.headers.host }, body: null, head: [] },
        res,
        (kind) => {
          failures.push(kind);
          res.writeHead(502).end(kind);
        },
      ),
    );
    frontUrl = (await listenLocal(front)).url;
  });
  afterAll(async () => {
    await forwarder.close();
    front.closeAllConnections();
    await new Promise((r) => front.close(r));
    await new Promise((r) => upstream.close(r));
  });

  /** A request through the front: its status and body, or how its connection ended. */
  const get = (path: string) =>
    new Promise<{ status: number; body: string } | { error: string }>((resolve) => {
      http
        .get(frontUrl + path, { agent: false }, (res) => {
          let body = '';
          res.setEncoding('latin1');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
          res.on('error', (err) => resolve({ error: err.message }));
          res.on('close', () => res.complete || resolve({ error: 'closed before its end' }));
        })
        .on('error', (err) => resolve({ error: err.message }));
    });

  it.each(['/garbage', '/huge-head', '/cl-and-te', '/bad-length'])(
    '%s: a 502 through the failure path, and the next request is served',
    async (path) => {
      const before = failures.length;
      expect(await get(path)).toMatchObject({ status: 502, body: 'bad_gateway' });
      expect(failures.slice(before)).toEqual(['bad_gateway']);
      expect(await get('/ok')).toMatchObject({ status: 200, body: 'ok' });
    },
  );

  it('relays the answer asked for and not a second one sent after it; the next request gets its own', async () => {
    expect(await get('/twice')).toMatchObject({ status: 200, body: 'ok' });
    for (let i = 0; i < 4; i++) expect(await get('/ok')).toMatchObject({ status: 200, body: 'ok' });
  });

  it('relays a chunked body whole', async () => {
    expect(await get('/chunked')).toMatchObject({ status: 200, body: 'hello world' });
  });

  it('relays a body that ends with the connection', async () => {
    expect(await get('/until-close')).toMatchObject({ status: 200, body: 'all of it' });
    expect(await get('/ok')).toMatchObject({ status: 200, body: 'ok' });
  });

  it('cuts the client connection when the upstream cuts a body it announced longer', async () => {
    // The head (200) was relayed before the cut: the client must see the connection end short.
    expect(await get('/cut-body')).toHaveProperty('error');
    expect(await get('/ok')).toMatchObject({ status: 200, body: 'ok' });
  });
});

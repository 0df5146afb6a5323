// bench/load.ts's runPaced, the open-loop load of the hop suite's fixed-load phase, against local
// servers: it keeps its rate, counts latency from each request's intended send time (a stall of the
// server shows in the percentiles even when it holds every connection), and parses chunked and
// Content-Length bodies, statuses and Connection: close. About 4 s.
import { describe, it, expect, afterEach } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { Server as NetServer } from 'node:net';
import { runPaced } from '../../bench/load.js';
import { listenLocal } from '../helpers/listen.js';

const servers: (Server | NetServer)[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    (s as Server).closeAllConnections?.();
    await new Promise((r) => s.close(r));
  }
});

async function listen(s: Server | NetServer): Promise<string> {
  servers.push(s);
  return (await listenLocal(s)).url;
}
const http = (handler: (req: IncomingMessage, res: ServerResponse) => void) => listen(createServer(handler));
const headers = () => ({ authorization: 'Bearer test', 'x-forwarded-for': '10.0.0.1' });

describe('runPaced', () => {
  it('keeps an even rate against a server that answers at once', async () => {
    const seen: Record<string, string | undefined>[] = [];
    const url = await http((req, res) => {
      if (seen.length < 3)
        seen.push({
          authorization: req.headers.authorization,
          xff: req.headers['x-forwarded-for'] as string | undefined,
          connection: req.headers.connection,
        });
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    const r = await runPaced({ url, path: '/x', rate: 500, duration: 1, headers });
    expect(r.requests).toBeGreaterThanOrEqual(450);
    expect(r.requests).toBeLessThanOrEqual(550);
    expect(r.statuses).toEqual({ 200: r.requests });
    expect(r.errors).toBe(0);
    expect(r.non2xx).toBe(0);
    expect(r.rps).toBeGreaterThan(450);
    expect(r.rps).toBeLessThan(550);
    // No bound on the latency itself: what a local server's answer takes is the machine's load (5.7 ms
    // at the median on two busy cores), not the pacer's behaviour; the order of the quantiles is.
    expect(r.p50).toBeLessThanOrEqual(r.p90);
    expect(r.p90).toBeLessThanOrEqual(r.p99);
    expect(seen[0]).toEqual({ authorization: 'Bearer test', xff: '10.0.0.1', connection: 'keep-alive' });
  });

  it('counts latency from the intended send time: a 200 ms stall shows in p99 though it holds both connections', async () => {
    // The server answers nothing from 300 to 500 ms after the first request, then everything held. Two
    // connections: the two requests sent into the stall wait 200 ms on the server; the ~100 due meanwhile
    // wait in the generator's line. Timed from when they were sent, only those two would be slow (p99
    // near zero); timed from when they were due, a fifth of the run spreads over 0 to 200 ms.
    let first = 0;
    const url = await http((_req, res) => {
      const now = performance.now();
      if (!first) first = now;
      const t = now - first;
      if (t >= 300 && t < 500) setTimeout(() => res.end('late'), 500 - t);
      else res.end('ok');
    });
    const r = await runPaced({ url, path: '/', rate: 500, duration: 1, connections: 2, headers });
    expect(r.requests).toBe(500);
    expect(r.errors).toBe(0);
    expect(r.p99).toBeGreaterThanOrEqual(150);
    expect(r.p90).toBeGreaterThanOrEqual(50);
    expect(r.p50).toBeLessThan(50);
  });

  it('parses chunked and Content-Length bodies split over reads, trailers, statuses and Connection: close', async () => {
    let n = 0;
    const url = await http((_req, res) => {
      switch (n++ % 5) {
        case 0: // chunked, in pieces a turn apart
          res.write('ab');
          setImmediate(() => {
            res.write('cd');
            setImmediate(() => res.end('ef'));
          });
          break;
        case 1: // Content-Length, the body a millisecond after the head
          res.setHeader('content-length', 6);
          res.flushHeaders();
          setTimeout(() => res.end('abcdef'), 1);
          break;
        case 2: // chunked with a trailer
          res.setHeader('trailer', 'x-t');
          res.write('x');
          res.addTrailers({ 'x-t': '1' });
          res.end();
          break;
        case 3: // another status, chunked
          res.statusCode = 404;
          res.write('no');
          res.end();
          break;
        default: // the server closes the connection after this one
          res.setHeader('connection', 'close');
          res.end('bye');
      }
    });
    const r = await runPaced({ url, path: '/', rate: 200, duration: 1, connections: 10, headers });
    expect(r.requests).toBe(200);
    expect(r.errors).toBe(0);
    expect(r.statuses).toEqual({ 200: 160, 404: 40 });
    expect(r.non2xx).toBe(40);
    expect(r.p50).toBeLessThan(20);

    // A raw server that sends a canned chunked response three bytes at a time: every boundary of the
    // parser (head, chunk-size line, data, CRLF, last chunk, trailer line) falls between reads.
    const canned = Buffer.from(
      'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nx-t: 1\r\n\r\n',
    );
    const raw = await listen(
      createNetServer((sock) => {
        sock.setNoDelay(true);
        let buf = '';
        sock.on('data', (d) => {
          buf += d.toString('latin1');
          while (buf.includes('\r\n\r\n')) {
            buf = buf.slice(buf.indexOf('\r\n\r\n') + 4);
            let i = 0;
            const step = () => {
              if (sock.destroyed || i >= canned.length) return;
              sock.write(canned.subarray(i, (i += 3)));
              setTimeout(step, 0);
            };
            step();
          }
        });
        sock.on('error', () => {});
      }),
    );
    const c = await runPaced({ url: raw, path: '/', rate: 50, duration: 0.5, connections: 5, headers });
    expect(c.requests).toBe(25);
    expect(c.errors).toBe(0);
    expect(c.statuses).toEqual({ 201: 25 });
  });
});

// Two floors below ./dispatch-floor.mjs, for where a Node gateway's CPU goes (bench/RESULTS.md, 2026-12-05):
// a pass-through with no checks whose upstream side is raw keep-alive sockets read by node's own llhttp
// parser (`HTTPParser` of node:_http_common, what node:http is built on), in front of it either
//   FLOOR=client  node:http (what keygate runs: the client side as keygate's, the upstream side lean), or
//   FLOOR=raw     raw sockets and the same parser too (no node:http, no undici at all).
// GET and HEAD without a body only, answers with a Content-Length, one request per connection at a time:
// the benchmark's load, not a proxy. Env: PORT, HOST, UPSTREAM_URL, FLOOR (client).
import http from 'node:http';
import net from 'node:net';
import { createRequire } from 'node:module';

const { HTTPParser, methods } = createRequire(import.meta.url)('_http_common');
const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '127.0.0.1';
const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:8081');
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer']);

/** A parser whose callbacks are the given ones (the others do nothing). */
function parser(type, onHeadersComplete, onBody, onComplete) {
  const p = new HTTPParser();
  p.initialize(type, {}, 0, 0);
  p[HTTPParser.kOnMessageBegin] = () => {};
  p[HTTPParser.kOnHeaders] = () => {};
  p[HTTPParser.kOnHeadersComplete] = onHeadersComplete;
  p[HTTPParser.kOnBody] = onBody;
  p[HTTPParser.kOnMessageComplete] = onComplete;
  return p;
}

/** Name-value pairs without the hop-by-hop ones, as field lines. */
function lines(raw) {
  let out = '';
  for (let i = 0; i < raw.length; i += 2) if (!HOP.has(raw[i].toLowerCase())) out += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return out;
}

const idle = [];

/** One keep-alive connection to the upstream; `answer(status, raw, body)` hears the answer of its request. */
function connection() {
  const socket = net.connect(Number(upstream.port), upstream.hostname);
  socket.setNoDelay(true);
  const c = { socket, answer: null, status: 0, raw: null, chunks: [] };
  const p = parser(
    HTTPParser.RESPONSE,
    (_maj, _min, raw, _m, _u, status) => {
      c.status = status;
      c.raw = raw;
      return 0;
    },
    (chunk) => void c.chunks.push(Buffer.from(chunk)),
    () => {
      const { answer, status, raw, chunks } = c;
      c.answer = null;
      c.chunks = [];
      idle.push(c);
      answer(status, raw, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    },
  );
  socket.on('data', (d) => p.execute(d));
  socket.on('error', () => {});
  return c;
}

function send(method, url, rawHeaders, answer) {
  const c = idle.pop() ?? connection();
  c.answer = answer;
  c.socket.write(`${method} ${url} HTTP/1.1\r\n${lines(rawHeaders)}connection: keep-alive\r\n\r\n`, 'latin1');
}

let server;
if ((process.env.FLOOR ?? 'client') === 'raw') {
  server = net.createServer((socket) => {
    socket.setNoDelay(true);
    const answer = (status, raw, body) => {
      socket.cork();
      socket.write(`HTTP/1.1 ${status} OK\r\n${lines(raw)}connection: keep-alive\r\n\r\n`, 'latin1');
      socket.write(body);
      socket.uncork();
    };
    const p = parser(
      HTTPParser.REQUEST,
      (_maj, _min, raw, method, url) => void send(methods[method], url, raw, answer),
      () => {},
      () => {},
    );
    socket.on('data', (d) => p.execute(d));
    socket.on('error', () => {});
  });
} else {
  server = http.createServer((req, res) => {
    send(req.method, req.url, req.rawHeaders, (status, raw, body) => {
      const head = [];
      for (let i = 0; i < raw.length; i += 2) if (!HOP.has(raw[i].toLowerCase())) head.push(raw[i], raw[i + 1]);
      res.writeHead(status, head);
      res.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
}
server.listen(port, host, () =>
  console.log(`parser floor (${process.env.FLOOR ?? 'client'}) pid ${process.pid} on ${host}:${port}`),
);
for (const sig of ['SIGTERM', 'SIGINT']) process.once(sig, () => process.exit(0));

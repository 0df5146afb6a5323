// The failover benchmark's baseline (bench/upstreams/failover.ts): a bare proxy in front of several
// targets, node:http and one undici Pool per target taken in turn, with no health checks and no
// retries, as a reverse proxy with a static upstream list and nothing else behaves. A request whose
// target fails answers 502 (504 when no head came within UPSTREAM_TIMEOUT_MS).
// Env: PORT, TARGETS (comma-separated http:// origins), UPSTREAM_TIMEOUT_MS (10000).
import http from 'node:http';
import { Pool } from 'undici';

const targets = (process.env.TARGETS ?? '').split(',').filter(Boolean);
if (targets.length === 0) throw new Error('TARGETS: one or more http:// origins, comma-separated');
const timeoutMs = Number(process.env.UPSTREAM_TIMEOUT_MS ?? 10_000);
const pools = targets.map(
  (t) => new Pool(t, { connections: 64, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: timeoutMs }),
);
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer']);
let next = 0;

function fail(res, status) {
  if (res.headersSent) return void res.destroy();
  const body = JSON.stringify({ error: { code: status === 504 ? 'gateway_timeout' : 'bad_gateway' } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const pool = pools[next];
    next = (next + 1) % pools.length;
    const headers = {};
    for (const k in req.headers) if (!HOP.has(k) && k !== 'host') headers[k] = req.headers[k];
    pool.stream(
      {
        path: req.url,
        method: req.method,
        headers,
        body: chunks.length > 0 ? Buffer.concat(chunks) : null,
        opaque: res,
      },
      ({ statusCode, headers: got, opaque }) => {
        const out = {};
        for (const k in got) if (!HOP.has(k)) out[k] = got[k];
        opaque.writeHead(statusCode, out);
        return opaque;
      },
      (err) => {
        if (err) fail(res, err.code === 'UND_ERR_HEADERS_TIMEOUT' ? 504 : 502);
      },
    );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.send?.({ listening: server.address().port });
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));

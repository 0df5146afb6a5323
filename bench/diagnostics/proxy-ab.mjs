// Diagnostic A/B (bench/RESULTS.md, 'CPU per request'): http-proxy-3 with one extra step before proxy.web
// (an await, a setImmediate, a socket timeout, six headers), all in one process with autocannon.
// Run: node bench/diagnostics/proxy-ab.mjs bare await immediate timeout headers bare
import http from 'node:http';
import { createProxyServer } from 'http-proxy-3';
import autocannon from 'autocannon';
import { createHmac } from 'node:crypto';
const up = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"data":{"ok":true},"meta":{"request_id":"x"}}');
});
await new Promise((r) => up.listen(0, '127.0.0.1', r));
const target = `http://127.0.0.1:${up.address().port}`;
function make(mode) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, keepAliveMsecs: 30000 });
  const proxy = createProxyServer({ target, agent, xfwd: false, changeOrigin: false });
  proxy.on('error', () => {});
  if (mode === 'timeout') proxy.on('proxyReq', (pr) => pr.setTimeout(30000, () => pr.destroy()));
  return http.createServer(async (req, res) => {
    if (mode === 'await') await Promise.resolve();
    if (mode === 'immediate') await new Promise((r) => setImmediate(r));
    if (mode === 'headers') {
      for (let i = 0; i < 6; i++) res.setHeader('X-RateLimit-' + i, 12345);
    }
    if (mode === 'hmac') {
      createHmac('sha256', 'k').update('abc').digest('hex');
      createHmac('sha256', 'k').update('abcdef').digest('hex');
    }
    if (mode === 'finish') res.on('finish', () => {});
    proxy.web(req, res);
  });
}
for (const mode of process.argv.slice(2)) {
  const srv = make(mode);
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${srv.address().port}/x`;
  await autocannon({ url, connections: 50, duration: 2 });
  const c0 = process.cpuUsage();
  const r = await autocannon({ url, connections: 50, duration: 5 });
  const c1 = process.cpuUsage(c0);
  console.log(
    mode.padEnd(10),
    Math.round(r.requests.average),
    'req/s',
    Math.round((c1.user + c1.system) / r.requests.total),
    'µs cpu/req (all in one process)',
  );
  srv.close();
  srv.closeAllConnections();
}
process.exit(0);

import http from 'node:http';
import type { GatewayMetrics } from './metrics.js';

/** /healthz (alive), /readyz (dependencies), /metrics (Prometheus text) on ADMIN_PORT. */
export function createAdminServer(o: { metrics: GatewayMetrics; ready: () => Promise<boolean> }): http.Server {
  return http.createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain' });
      return res.end('method not allowed\n');
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"status":"ok"}');
    }
    if (path === '/readyz') {
      const ok = await o.ready().catch(() => false);
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ status: ok ? 'ready' : 'not_ready' }));
    }
    if (path === '/metrics') {
      const text = await o.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': o.metrics.registry.contentType });
      return res.end(text);
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  });
}

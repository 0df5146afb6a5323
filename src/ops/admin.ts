import http from 'node:http';
import type { GatewayMetrics } from './metrics.js';
import type { JwtSigner } from '../http/identity-jwt.js';

export type DependencyState = 'up' | 'down' | 'degraded' | 'absent';

export interface AdminOptions {
  metrics: GatewayMetrics;
  /** Whether this process should get traffic: started, configuration loaded, not draining. */
  ready: () => boolean;
  /** The dependencies' health, for the readiness body and the metrics; never a reason to turn unready. */
  checks: () => Promise<Record<string, DependencyState>>;
  /** With IDENTITY_FORMAT jwt|both: /.well-known/jwks.json publishes its public keys. */
  jwt?: JwtSigner | null;
}

/**
 * /healthz (alive), /readyz (this process should get traffic), /metrics (Prometheus text) on
 * ADMIN_PORT. Every replica shares one PostgreSQL and one Redis: if readiness followed them, a
 * dependency outage would take every pod out of its Service at once, also for the traffic the gateway
 * can still serve (cached principals, the fallback limiter). Their health is in the body and metrics.
 */
/**
 * What every admin listener answers the same way (this process's and the WORKERS primary's): methods
 * other than GET and HEAD (405) and /healthz. Returns the path to serve, or null when answered.
 */
export function adminPath(req: http.IncomingMessage, res: http.ServerResponse): string | null {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { 'content-type': 'text/plain' });
    res.end('method not allowed\n');
    return null;
  }
  if (path === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"ok"}');
    return null;
  }
  return path;
}

export function createAdminServer(o: AdminOptions): http.Server {
  return http.createServer(async (req, res) => {
    const path = adminPath(req, res);
    if (path === null) return;
    if (path === '/readyz') {
      const ok = o.ready();
      const checks = await o.checks().catch(() => ({}));
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ status: ok ? 'ready' : 'not_ready', checks }));
    }
    if (path === '/.well-known/jwks.json' && o.jwt) {
      // Verifiers cache the set (jose refetches on an unknown kid): a new key is published before it signs.
      res.writeHead(200, { 'content-type': 'application/jwk-set+json', 'cache-control': 'public, max-age=300' });
      return res.end(JSON.stringify(o.jwt.jwks()));
    }
    if (path === '/metrics') {
      await o.checks().catch(() => undefined);
      const text = await o.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': o.metrics.registry.contentType });
      return res.end(text);
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  });
}

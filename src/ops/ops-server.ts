// The operations listener (ADMIN_HOST:ADMIN_PORT): /healthz, /readyz, /metrics and the JWKS. It shares
// the gateway's event loop, so what it may cost is bounded: the dependency checks run in the background
// (one round a second, whatever the number of probes) and /readyz answers from their last result; at
// most ADMIN_MAX_CONNECTIONS connections, short timeouts, and at most ANSWERS_PER_SECOND answers a
// second, later requests waiting for the next second (a flood slows itself, the gateway does not).
import http from 'node:http';
import type { GatewayMetrics } from './metrics.js';
import type { JwtSigner } from '../http/identity-jwt.js';

export type DependencyState = 'up' | 'down' | 'degraded' | 'absent';
/** Each dependency's state; `services` maps each service behind the gateway to `up` or `no_healthy_target`. */
export type DependencyChecks = Record<string, DependencyState | Record<string, 'up' | 'no_healthy_target'>>;

/** Answers a second, per admin listener: far above probes and scrapes, far below a flood. */
export const ANSWERS_PER_SECOND = 200;

export interface AdminOptions {
  metrics: GatewayMetrics;
  /** Whether this process should get traffic: started, configuration loaded, not draining. */
  ready: () => boolean;
  /** The dependencies' health as last checked in the background (never a reason to turn unready). */
  checks: () => DependencyChecks;
  /** With IDENTITY_FORMAT jwt|both: /.well-known/jwks.json publishes its public keys. */
  jwt?: JwtSigner | null;
  /** ADMIN_MAX_CONNECTIONS. */
  maxConnections?: number;
}

/**
 * The dependency checks, run one round at a time every `intervalMs` (the first at once), their last
 * result kept for the probes. A round that hangs is bounded by the checks' own timeouts.
 */
export function backgroundChecks(
  run: () => Promise<DependencyChecks>,
  intervalMs = 1_000,
): { current(): DependencyChecks; first: Promise<void>; stop(): void } {
  let current: DependencyChecks = {};
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const round = async () => {
    try {
      current = await run();
    } catch {
      // The checks catch their own failures; anything else leaves the last result in place.
    }
    if (!stopped) timer = setTimeout(round, intervalMs).unref();
  };
  const first = round();
  return {
    current: () => current,
    first,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * At most `perSecond` calls of `fn` start in one wall-clock second; the others wait, in order, for a
 * later second. Probes are answered in well under a second; a flood gets one answer per slot.
 */
export function answerBudget(perSecond: number): (fn: () => void) => void {
  let second = 0;
  let used = 0;
  const waiting: (() => void)[] = [];
  let timer: NodeJS.Timeout | undefined;
  const drain = () => {
    timer = undefined;
    second = Math.floor(Date.now() / 1000);
    used = 0;
    while (waiting.length && used < perSecond) {
      used++;
      waiting.shift()!();
    }
    if (waiting.length) timer = setTimeout(drain, 1000 - (Date.now() % 1000)).unref();
  };
  return (fn) => {
    const now = Math.floor(Date.now() / 1000);
    if (now !== second) {
      second = now;
      used = 0;
    }
    if (!waiting.length && used < perSecond) {
      used++;
      return fn();
    }
    waiting.push(fn);
    timer ??= setTimeout(drain, 1000 - (Date.now() % 1000)).unref();
  };
}

/** The admin listener's own limits: few connections, short timeouts (it serves probes and scrapers). */
export function boundAdminServer(server: http.Server, maxConnections: number): http.Server {
  server.maxConnections = maxConnections;
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  server.maxHeadersCount = 50;
  return server;
}

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

/** Concurrent calls share one run of `fn` (a scrape storm renders the registry once). */
export function shared<T>(fn: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | null = null;
  return () => (running ??= fn().finally(() => (running = null)));
}

/**
 * /healthz (alive), /readyz (this process should get traffic), /metrics (Prometheus text). Every
 * replica shares one PostgreSQL and one Redis: if readiness followed them, a dependency outage would
 * take every pod out of its Service at once, also for the traffic the gateway can still serve (cached
 * principals, the fallback limiter). Their health is in the body and metrics.
 */
export function createAdminServer(o: AdminOptions): http.Server {
  const budget = answerBudget(ANSWERS_PER_SECOND);
  const render = shared(() => o.metrics.registry.metrics());
  const server = http.createServer((req, res) =>
    budget(() => {
      const path = adminPath(req, res);
      if (path === null) return;
      if (path === '/readyz') {
        const ok = o.ready();
        res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ status: ok ? 'ready' : 'not_ready', checks: o.checks() }));
      }
      if (path === '/.well-known/jwks.json' && o.jwt) {
        // Verifiers cache the set (jose refetches on an unknown kid): a new key is published before it signs.
        res.writeHead(200, { 'content-type': 'application/jwk-set+json', 'cache-control': 'public, max-age=300' });
        return void res.end(JSON.stringify(o.jwt.jwks()));
      }
      if (path === '/metrics') {
        return void render().then(
          (text) => {
            res.writeHead(200, { 'content-type': o.metrics.registry.contentType });
            res.end(text);
          },
          () => {
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end('metrics unavailable\n');
          },
        );
      }
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
    }),
  );
  return boundAdminServer(server, o.maxConnections ?? 32);
}

// Prometheus metrics on ADMIN_PORT. Labels are route templates, methods, statuses and codes only:
// never a key, an IP or a user id.
import { Counter, Histogram, Registry, Gauge, collectDefaultMetrics } from 'prom-client';

export interface GatewayMetrics {
  registry: Registry;
  request(route: string, method: string, status: number, code: string | null, ms: number): void;
  rateLimit(layer: 'key' | 'ip' | 'v1', rejected: boolean, nearLimit: boolean): void;
  authFailure(kind: 'invalid_key' | 'cooldown'): void;
  cache(hit: boolean): void;
  invalidation(n?: number): void;
  upstreamFailure(kind: string): void;
  upstreamLatency(seconds: number): void;
  redisLatency(op: string, seconds: number, ok: boolean): void;
  degraded(on: boolean): void;
  degradedCall(mode: 'open' | 'closed'): void;
}

export function createMetrics(opts: { defaults?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  if (opts.defaults) collectDefaultMetrics({ register: registry, prefix: 'keygate_' });
  const requests = new Counter({
    name: 'keygate_requests_total',
    help: 'Gateway responses by route template, method, status and Envelope A code.',
    labelNames: ['route', 'method', 'status', 'code'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'keygate_request_duration_seconds',
    help: 'Time from request to response head, by route template.',
    labelNames: ['route'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [registry],
  });
  const decisions = new Counter({
    name: 'keygate_rate_limit_decisions_total',
    help: 'Rate-limit decisions by layer and outcome.',
    labelNames: ['layer', 'outcome'],
    registers: [registry],
  });
  const near = new Counter({
    name: 'keygate_rate_limit_near_limit_total',
    help: 'Accepted requests that left no token in their layer.',
    labelNames: ['layer'],
    registers: [registry],
  });
  const auth = new Counter({ name: 'keygate_auth_failures_total', help: 'Failed authentications and cooldown refusals.', labelNames: ['kind'], registers: [registry] });
  const cache = new Counter({ name: 'keygate_principal_cache_total', help: 'Principal cache lookups.', labelNames: ['result'], registers: [registry] });
  const inval = new Counter({ name: 'keygate_principal_cache_invalidations_total', help: 'Principals evicted on a change notification.', registers: [registry] });
  const upstream = new Counter({ name: 'keygate_upstream_failures_total', help: 'Upstream failures by kind.', labelNames: ['kind'], registers: [registry] });
  const degraded = new Gauge({ name: 'keygate_degraded', help: '1 while the gateway runs without its shared rate-limit store (Redis).', registers: [registry] });
  degraded.set(0);
  const transitions = new Counter({ name: 'keygate_degraded_transitions_total', help: 'Switches into (to=degraded) and out of (to=shared) degraded mode.', labelNames: ['to'], registers: [registry] });
  const degradedCalls = new Counter({ name: 'keygate_degraded_calls_total', help: 'Store calls answered without Redis, by RATE_LIMIT_FAILURE_MODE.', labelNames: ['mode'], registers: [registry] });
  const redisLat = new Histogram({
    name: 'keygate_redis_duration_seconds',
    help: 'Latency of Redis calls by operation and outcome.',
    labelNames: ['op', 'outcome'],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    registers: [registry],
  });
  const upstreamLat = new Histogram({
    name: 'keygate_upstream_duration_seconds',
    help: 'Time from forwarding to the upstream response head.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30],
    registers: [registry],
  });
  // Label children cached by their values: prom-client hashes the label object on every call otherwise.
  const requestChildren = new Map<string, { inc(): void }>();
  const durationChildren = new Map<string, { observe(v: number): void }>();
  const decisionChildren = new Map<string, { inc(): void }>();
  const redisChildren = new Map<string, { observe(v: number): void }>();
  const cacheHit = cache.labels({ result: 'hit' });
  const cacheMiss = cache.labels({ result: 'miss' });
  return {
    registry,
    request(route, method, status, code, ms) {
      const k = `${route} ${method} ${status} ${code ?? ''}`;
      let c = requestChildren.get(k);
      if (!c) requestChildren.set(k, (c = requests.labels({ route, method, status: String(status), code: code ?? '' })));
      c.inc();
      let d = durationChildren.get(route);
      if (!d) durationChildren.set(route, (d = duration.labels({ route })));
      d.observe(ms / 1000);
    },
    rateLimit(layer, rejected, nearLimit) {
      child(decisionChildren, `${layer} ${rejected}`, () => decisions.labels({ layer, outcome: rejected ? 'rejected' : 'accepted' })).inc();
      if (!rejected && nearLimit) near.inc({ layer });
    },
    authFailure(kind) {
      auth.inc({ kind });
    },
    cache(hit) {
      (hit ? cacheHit : cacheMiss).inc();
    },
    invalidation(n = 1) {
      inval.inc(n);
    },
    upstreamFailure(kind) {
      upstream.inc({ kind });
    },
    upstreamLatency(seconds) {
      upstreamLat.observe(seconds);
    },
    redisLatency(op, seconds, ok) {
      child(redisChildren, `${op} ${ok}`, () => redisLat.labels({ op, outcome: ok ? 'ok' : 'error' })).observe(seconds);
    },
    degraded(on) {
      degraded.set(on ? 1 : 0);
      transitions.inc({ to: on ? 'degraded' : 'shared' });
    },
    degradedCall(mode) {
      degradedCalls.inc({ mode });
    },
  };
}

/** The label child cached under `key` (the labels' values are few and fixed). */
function child<T>(m: Map<string, T>, key: string, make: () => T): T {
  let c = m.get(key);
  if (c === undefined) m.set(key, (c = make()));
  return c;
}

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
  // The per-request counters are tallied in plain numbers and handed to prom-client when scraped:
  // prom-client hashes the label object on every inc(), even on a child from labels().
  const requestTally = new Tally<'route' | 'method' | 'status' | 'code'>();
  const decisionTally = new Tally<'layer' | 'outcome'>();
  const nearTally = new Tally<'layer'>();
  const cacheTally = new Tally<'result'>();
  new Counter({
    name: 'keygate_requests_total',
    help: 'Gateway responses by route template, method, status and Envelope A code.',
    labelNames: ['route', 'method', 'status', 'code'],
    registers: [registry],
    collect() {
      requestTally.flush(this);
    },
  });
  const duration = new Histogram({
    name: 'keygate_request_duration_seconds',
    help: 'Time from request to response head, by route template.',
    labelNames: ['route'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [registry],
  });
  new Counter({
    name: 'keygate_rate_limit_decisions_total',
    help: 'Rate-limit decisions by layer and outcome.',
    labelNames: ['layer', 'outcome'],
    registers: [registry],
    collect() {
      decisionTally.flush(this);
    },
  });
  new Counter({
    name: 'keygate_rate_limit_near_limit_total',
    help: 'Accepted requests that left no token in their layer.',
    labelNames: ['layer'],
    registers: [registry],
    collect() {
      nearTally.flush(this);
    },
  });
  const auth = new Counter({ name: 'keygate_auth_failures_total', help: 'Failed authentications and cooldown refusals.', labelNames: ['kind'], registers: [registry] });
  new Counter({
    name: 'keygate_principal_cache_total',
    help: 'Principal cache lookups.',
    labelNames: ['result'],
    registers: [registry],
    collect() {
      cacheTally.flush(this);
    },
  });
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
  const durationChildren = new Map<string, { observe(v: number): void }>();
  const redisChildren = new Map<string, { observe(v: number): void }>();
  return {
    registry,
    request(route, method, status, code, ms) {
      requestTally.add(`${route} ${method} ${status} ${code ?? ''}`, () => ({ route, method, status: String(status), code: code ?? '' }));
      let d = durationChildren.get(route);
      if (!d) durationChildren.set(route, (d = duration.labels({ route })));
      d.observe(ms / 1000);
    },
    rateLimit(layer, rejected, nearLimit) {
      decisionTally.add(rejected ? `${layer} r` : layer, () => ({ layer, outcome: rejected ? 'rejected' : 'accepted' }));
      if (!rejected && nearLimit) nearTally.add(layer, () => ({ layer }));
    },
    authFailure(kind) {
      auth.inc({ kind });
    },
    cache(hit) {
      cacheTally.add(hit ? 'hit' : 'miss', () => ({ result: hit ? 'hit' : 'miss' }));
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

/** Counts by label set, kept as plain numbers until the next scrape moves them into a prom-client Counter. */
class Tally<L extends string> {
  private counts = new Map<string, { labels: Record<L, string>; n: number }>();

  /** One more under `key`, a string naming the label values; `labels` is called once per new key. */
  add(key: string, labels: () => Record<L, string>): void {
    const e = this.counts.get(key);
    if (e) e.n++;
    else this.counts.set(key, { labels: labels(), n: 1 });
  }

  flush(counter: Counter<L>): void {
    for (const e of this.counts.values()) {
      if (e.n > 0) counter.inc(e.labels, e.n);
      e.n = 0;
    }
  }
}

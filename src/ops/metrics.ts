// Prometheus metrics on ADMIN_PORT. Labels are route templates, methods, statuses and codes only:
// never a key, an IP or a user id.
import {
  Counter,
  Registry,
  Gauge,
  collectDefaultMetrics,
  type Metric,
  type MetricObjectWithValues,
  type MetricValueWithName,
} from 'prom-client';
import { logLinesDropped } from './log-sink.js';
import { upstreamSeries, type UpstreamMetrics } from './upstream-metrics.js';

export interface GatewayMetrics {
  registry: Registry;
  request(route: string, method: string, status: number, code: string | null, ms: number): void;
  /** `layer`: `key` (a bucket), `ip`, `month`, or an interface's one per-key layer by its id (`v1`). */
  rateLimit(layer: string, rejected: boolean, nearLimit: boolean): void;
  /** A request a limit layer (or quota) would have refused, forwarded because its limit is in shadow. */
  shadowRefusal(layer: string): void;
  authFailure(kind: 'invalid_key' | 'cooldown'): void;
  cache(hit: boolean): void;
  invalidation(n?: number): void;
  upstreamFailure(kind: string): void;
  upstreamLatency(seconds: number): void;
  redisLatency(op: string, seconds: number, ok: boolean): void;
  degraded(on: boolean): void;
  degradedCall(mode: 'open' | 'closed'): void;
  /** Whether a dependency answered its last check (readiness body, every scrape). */
  dependency(name: 'database' | 'redis', up: boolean): void;
  /** A connection closed at accept by a connection bound (src/ops/connection-limits.ts). */
  connectionRefused(listener: string, reason: string): void;
  /** The services behind the gateway: their targets' health, failed tries and retries. */
  upstreams: UpstreamMetrics;
}

export function createMetrics(opts: { defaults?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  if (opts.defaults) {
    collectDefaultMetrics({ register: registry, prefix: 'keygate_' });
    renameTotalGauges(registry);
  }
  // Registered in the order of the exposition.
  const { requestTally, duration, decisionTally, nearTally } = requestSeries(registry);
  const { auth, cacheTally, inval, shadow } = accessSeries(registry);
  const { upstream, degraded, transitions, dependencyUp, connRefused, degradedCalls } = dependencySeries(registry);
  countDroppedLogLines(registry);
  const { redisLat, upstreamLat } = latencySeries(registry);
  const upstreams = upstreamSeries(registry);
  return {
    registry,
    upstreams,
    request: requestRecorder(requestTally, duration),
    rateLimit(layer, rejected, nearLimit) {
      decisionTally.add(rejected ? `${layer} r` : layer, () => ({
        layer,
        outcome: rejected ? 'rejected' : 'accepted',
      }));
      if (!rejected && nearLimit) nearTally.add(layer, () => ({ layer }));
    },
    shadowRefusal(layer) {
      shadow.inc({ layer });
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
      redisLat.series(ok ? op : `${op} error`, () => ({ op, outcome: ok ? 'ok' : 'error' })).observe(seconds);
    },
    degraded(on) {
      degraded.set(on ? 1 : 0);
      transitions.inc({ to: on ? 'degraded' : 'shared' });
    },
    degradedCall(mode) {
      degradedCalls.inc({ mode });
    },
    dependency(name, up) {
      dependencyUp.set({ dependency: name }, up ? 1 : 0);
    },
    connectionRefused(listener, reason) {
      connRefused.inc({ listener, reason });
    },
  };
}

/** Responses, their durations and the rate-limit decisions. */
function requestSeries(registry: Registry) {
  // The per-request counters are tallied in plain numbers and handed to prom-client when scraped:
  // prom-client hashes the label object on every inc(), even on a child from labels().
  const requestTally = talliedCounter(
    registry,
    'keygate_requests_total',
    'Gateway responses by route template, method, status and Envelope A code.',
    ['route', 'method', 'status', 'code'],
  );
  const duration = new FastHistogram<'route'>(
    registry,
    'keygate_request_duration_seconds',
    'Time from request to response head, by route template.',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
  );
  const decisionTally = talliedCounter(
    registry,
    'keygate_rate_limit_decisions_total',
    'Rate-limit decisions by layer and outcome.',
    ['layer', 'outcome'],
  );
  const nearTally = talliedCounter(
    registry,
    'keygate_rate_limit_near_limit_total',
    'Accepted requests that left no token in their layer.',
    ['layer'],
  );
  return { requestTally, duration, decisionTally, nearTally };
}

/** Authentication failures, the principal cache and shadow refusals. */
function accessSeries(registry: Registry) {
  const auth = new Counter({
    name: 'keygate_auth_failures_total',
    help: 'Failed authentications and cooldown refusals.',
    labelNames: ['kind'],
    registers: [registry],
  });
  const cacheTally = talliedCounter(registry, 'keygate_principal_cache_total', 'Principal cache lookups.', ['result']);
  const inval = new Counter({
    name: 'keygate_principal_cache_invalidations_total',
    help: 'Principals evicted on a change notification.',
    registers: [registry],
  });
  const shadow = new Counter({
    name: 'keygate_shadow_refusals_total',
    help: 'Requests a limit would have refused but forwarded, its mode being shadow, by layer.',
    labelNames: ['layer'],
    registers: [registry],
  });
  return { auth, cacheTally, inval, shadow };
}

/** The upstream, the shared store (degraded mode), the dependencies' checks and refused connections. */
function dependencySeries(registry: Registry) {
  const upstream = new Counter({
    name: 'keygate_upstream_failures_total',
    help: 'Upstream failures by kind.',
    labelNames: ['kind'],
    registers: [registry],
  });
  const degraded = new Gauge({
    name: 'keygate_degraded',
    help: '1 while the gateway runs without its shared rate-limit store (Redis).',
    registers: [registry],
  });
  degraded.set(0);
  const transitions = new Counter({
    name: 'keygate_degraded_transitions_total',
    help: 'Switches into (to=degraded) and out of (to=shared) degraded mode.',
    labelNames: ['to'],
    registers: [registry],
  });
  const dependencyUp = new Gauge({
    name: 'keygate_dependency_up',
    help: '1 when the dependency (database, redis) answered its last check; readiness does not depend on it.',
    labelNames: ['dependency'],
    registers: [registry],
  });
  const connRefused = new Counter({
    name: 'keygate_connections_refused_total',
    help: 'Connections closed at accept: the listener held its maximum (reason=listener) or the peer address its share (reason=address).',
    labelNames: ['listener', 'reason'],
    registers: [registry],
  });
  const degradedCalls = new Counter({
    name: 'keygate_degraded_calls_total',
    help: 'Store calls answered without Redis, by RATE_LIMIT_FAILURE_MODE.',
    labelNames: ['mode'],
    registers: [registry],
  });
  return { upstream, degraded, transitions, dependencyUp, connRefused, degradedCalls };
}

/** Log lines the log sink dropped, read at each scrape. */
function countDroppedLogLines(registry: Registry): void {
  let droppedReported = 0;
  new Counter({
    name: 'keygate_log_lines_dropped_total',
    help: 'Log lines dropped because the log output (stdout) did not keep up or failed.',
    registers: [registry],
    collect() {
      const dropped = logLinesDropped();
      if (dropped > droppedReported) this.inc(dropped - droppedReported);
      droppedReported = dropped;
    },
  });
}

/** Latencies of Redis calls and of the upstream. */
function latencySeries(registry: Registry) {
  const redisLat = new FastHistogram<'op' | 'outcome'>(
    registry,
    'keygate_redis_duration_seconds',
    'Latency of Redis calls by operation and outcome.',
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
  );
  const upstreamLat = new FastHistogram<never>(
    registry,
    'keygate_upstream_duration_seconds',
    'Time from forwarding to the upstream response head.',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30],
  ).series('', () => ({}));
  return { redisLat, upstreamLat };
}

/** `request()` of the metrics: one response's tally entry and duration series. */
function requestRecorder(
  requestTally: Tally<'route' | 'method' | 'status' | 'code'>,
  duration: FastHistogram<'route'>,
): GatewayMetrics['request'] {
  // Each answer's entries found through maps keyed by the label values themselves (route templates and
  // methods are the same string objects every time, their hashes kept by V8): a key string joined per
  // request had to be hashed and compared whole, some 0.2 µs.
  const byRoute = new Map<string, { duration: Series; byMethod: Map<string, Map<number | string, TallyEntry>> }>();
  return (route, method, status, code, ms) => {
    let r = byRoute.get(route);
    if (r === undefined)
      byRoute.set(route, (r = { duration: duration.series(route, () => ({ route })), byMethod: new Map() }));
    let byStatus = r.byMethod.get(method);
    if (byStatus === undefined) r.byMethod.set(method, (byStatus = new Map()));
    const k = code === null ? status : `${status} ${code}`;
    let e = byStatus.get(k);
    if (e === undefined)
      byStatus.set(
        k,
        (e = requestTally.entry(`${route} ${method} ${status} ${code ?? ''}`, () => ({
          route,
          method,
          status: String(status),
          code: code ?? '',
        }))),
      );
    e.n++;
    r.duration.observe(ms / 1000);
  };
}

/**
 * prom-client's default `nodejs_active_{handles,requests,resources}_total` are gauges, and only counters
 * may end in `_total` (`promtool check metrics`: "non-counter metrics should not have _total suffix";
 * rate() over them would be wrong). They are the sums of the per-type gauges of the same name without
 * the suffix, and are exported as `keygate_nodejs_active_*_all` instead.
 */
function renameTotalGauges(registry: Registry): void {
  for (const kind of ['handles', 'requests', 'resources']) {
    const metric = registry.getSingleMetric(`keygate_nodejs_active_${kind}_total`);
    if (!metric) continue;
    registry.removeSingleMetric(`keygate_nodejs_active_${kind}_total`);
    const name = `keygate_nodejs_active_${kind}_all`;
    const help = `Number of active ${kind}, all types together.`;
    registry.registerMetric({
      name,
      help,
      type: 'gauge',
      aggregator: 'sum',
      get: async () => ({ ...(await metric.get()), name, help }),
    } as unknown as Metric);
  }
}

/** A prom-client Counter fed by a Tally: what is added shows up in the exposition at the next scrape. */
function talliedCounter<L extends string>(registry: Registry, name: string, help: string, labelNames: L[]): Tally<L> {
  const tally = new Tally<L>();
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      tally.flush(this);
    },
  });
  return tally;
}

/** One label set's count since the last scrape. */
interface TallyEntry {
  n: number;
}

/** Counts by label set, kept as plain numbers until the next scrape moves them into a prom-client Counter. */
class Tally<L extends string> {
  private counts = new Map<string, TallyEntry & { labels: Record<L, string> }>();

  /** One more under `key`, a string naming the label values; `labels` is called once per new key. */
  add(key: string, labels: () => Record<L, string>): void {
    this.entry(key, labels).n++;
  }

  /** The entry under `key`, made (at 0) on first use; it stays the key's for good, so a caller may keep it. */
  entry(key: string, labels: () => Record<L, string>): TallyEntry {
    let e = this.counts.get(key);
    if (e === undefined) this.counts.set(key, (e = { labels: labels(), n: 0 }));
    return e;
  }

  flush(counter: Counter<L>): void {
    for (const e of this.counts.values()) {
      if (e.n > 0) counter.inc(e.labels, e.n);
      e.n = 0;
    }
  }
}

interface Series {
  observe(v: number): void;
}

/**
 * A histogram kept in plain arrays and exported in prom-client's format (the same text a prom-client
 * Histogram writes): prom-client's own hashes the label object on every observe(), even on a child.
 */
export class FastHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private all = new Map<
    string,
    { labels: Record<L, string>; counts: number[]; sum: number; count: number; observe(v: number): void }
  >();

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    private bounds: number[],
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series named `key` (a string naming the label values); `labels` is called once per new key. */
  series(key: string, labels: () => Record<L, string>): Series {
    let s = this.all.get(key);
    if (s === undefined) {
      const bounds = this.bounds;
      const series = {
        labels: labels(),
        counts: new Array<number>(bounds.length).fill(0),
        sum: 0,
        count: 0,
        observe(v: number) {
          let i = 0;
          while (i < bounds.length && v > bounds[i]) i++;
          if (i < bounds.length) series.counts[i]++;
          series.sum += v;
          series.count++;
        },
      };
      this.all.set(key, (s = series));
    }
    return s;
  }

  async get(): Promise<Omit<MetricObjectWithValues<MetricValueWithName<string>>, 'collect'>> {
    const values: MetricValueWithName<string>[] = [];
    for (const s of this.all.values()) {
      let acc = 0;
      this.bounds.forEach((b, i) => {
        acc += s.counts[i];
        values.push({ labels: { le: b, ...s.labels }, value: acc, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: 'histogram' as never, aggregator: 'sum', values };
  }

  reset(): void {
    this.all.clear();
  }
}

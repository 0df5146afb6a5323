// The OpenTelemetry side of ./tracing.ts, loaded only when tracing is configured: the SDK and the
// OTLP exporter are then in memory, never in a gateway that does not trace.
//
// Sampling is decided once, at the request's head, before any span exists: the configured sampler
// (OTEL_TRACES_SAMPLER, default parent-based always-on) is asked with the incoming `traceparent`'s
// context, if valid, and the trace id the request will carry. A request not sampled gets no span and
// no context object: only its trace id (the incoming one, or a fresh one) for the access log, and a
// `traceparent` with flags 00 for the upstream, so a service behind the gateway keeps the trace. A
// sampled request gets a SERVER span, and inside it:
// - `keygate.access`: steps 3 to 11 through the access resolver, with `keygate.access.source`
//   `cache` or `database`;
// - `keygate.rate_limit`: each round trip to the limit store (the gate for a cached principal, the
//   counters after a database lookup);
// - `keygate.upstream`: the exchange with the upstream (CLIENT), whose id travels in `traceparent`,
//   so the upstream's parent is this span.
// The spans carry the route template, the status, the refusal code, the organization and key ids and
// the request id: never a secret, a header value or the query string.
//
// The request's trace state lives on the gateway's request context (`ctx.span`), not in a map keyed
// by the response or in an AsyncLocalStorage (which would put promise hooks on every promise of the
// process as soon as one request was sampled). A sampled request carries its own access resolver,
// built over stores that open their spans under its span explicitly.
import { randomFillSync } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanContext,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type {
  RequestOutcome,
  RequestTrace,
  TraceableEvents,
  TraceableResolver,
  TraceableStores,
  TracedResolution,
  Tracing,
} from './tracing-types.js';

const propagator = new W3CTraceContextPropagator();
const headerGetter: TextMapGetter<IncomingMessage['headers']> = {
  keys: (h) => Object.keys(h),
  get: (h, key) => h[key],
};

// Ids from a pool of random bytes refilled 4 KiB at a time: one hex conversion per id.
const pool = Buffer.allocUnsafe(4096);
let poolAt = pool.length;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);
function randomHex(bytes: number): string {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const id = pool.toString('hex', poolAt, (poolAt += bytes));
  // An id of zeros is invalid (W3C Trace Context); 2^-64 at worst, but never sent.
  return id === ZERO_TRACE_ID || id === ZERO_SPAN_ID ? randomHex(bytes) : id;
}

/**
 * The sampler of `OTEL_TRACES_SAMPLER`/`OTEL_TRACES_SAMPLER_ARG`, as the SDK reads them: `always_on`,
 * `always_off`, `traceidratio`, and each of these `parentbased_` (the default, and what an unknown
 * value falls back to, is `parentbased_always_on`); a ratio that is missing or outside [0, 1] is 1.
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const arg = (env.OTEL_TRACES_SAMPLER_ARG ?? '').trim();
  const ratio = () => {
    const n = arg === '' ? NaN : Number(arg);
    return n >= 0 && n <= 1 ? n : 1;
  };
  switch ((env.OTEL_TRACES_SAMPLER ?? '').trim()) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * Tracing from the environment: the sampler as above, the service name from `OTEL_SERVICE_NAME`
 * (default `keygate`), the endpoint and headers from `OTEL_EXPORTER_OTLP_*` (OTLP/HTTP with JSON
 * bodies) and the batching from `OTEL_BSP_*`, these two read by the SDK itself.
 */
export function tracingFromEnv<R extends TraceableResolver>(
  env: NodeJS.ProcessEnv,
  exporter?: SpanExporter,
): Tracing<R> {
  return createTracing<R>({
    processor: new BatchSpanProcessor(exporter ?? new OTLPTraceExporter()),
    sampler: samplerFromEnv(env),
    serviceName: env.OTEL_SERVICE_NAME || 'keygate',
  });
}

export interface TracingOptions {
  processor: SpanProcessor;
  /** Decides each request at its head; a request it does not sample gets no span at all. */
  sampler: Sampler;
  serviceName: string;
}

/** A sampled request's resolver (the gateway's factory) over stores and events traced under `span`. */
type ResolverFactory<R> = (span: Span, spanContext: Context) => R;

const NO_ATTRIBUTES = {};
const NO_LINKS: never[] = [];
const UPSTREAM_FAILURES = new Set(['bad_gateway', 'gateway_timeout']);

/** A request not sampled: its ids travel upstream (flags 00), nothing is recorded. */
class UnsampledTrace implements RequestTrace<never> {
  readonly access = null;
  constructor(
    readonly traceId: string,
    /** The incoming parent's id (the gateway records no span of its own), or a fresh one. */
    private readonly parentId: string,
    private readonly traceState: string | undefined,
  ) {}

  upstream(headers: OutgoingHttpHeaders): void {
    headers.traceparent = `00-${this.traceId}-${this.parentId}-00`;
    setTraceState(headers, this.traceState);
  }

  end(): void {}
}

/** A sampled request: its SERVER span, its own resolver, and the upstream span once it forwards. */
class SampledTrace<R extends TraceableResolver> implements RequestTrace<R> {
  readonly traceId: string;
  private upstreamSpan: Span | null = null;
  private resolver: R | null | undefined;

  constructor(
    private readonly tracing: SampledTracing<R>,
    private readonly span: Span,
    private readonly context: Context,
    private readonly res: ServerResponse,
    private readonly method: string,
    private readonly traceState: string | undefined,
  ) {
    this.traceId = span.spanContext().traceId;
  }

  get access(): R | null {
    if (this.resolver === undefined) this.resolver = this.tracing.tracedAccess(this.context);
    return this.resolver;
  }

  upstream(headers: OutgoingHttpHeaders): void {
    const span = this.tracing.tracer.startSpan(
      'keygate.upstream',
      { kind: SpanKind.CLIENT, attributes: { 'http.request.method': this.method } },
      this.context,
    );
    this.upstreamSpan = span;
    headers.traceparent = `00-${this.traceId}-${span.spanContext().spanId}-01`;
    setTraceState(headers, this.traceState);
  }

  end(o: RequestOutcome, status: number): void {
    // The upstream span covers the whole exchange, to the end of the answer (or its failure).
    const up = this.upstreamSpan;
    if (up !== null) {
      if (o.code !== null && UPSTREAM_FAILURES.has(o.code)) {
        up.setAttribute('error.type', o.code);
        up.setStatus({ code: SpanStatusCode.ERROR, message: o.code });
      } else if (this.res.headersSent) up.setAttribute('http.response.status_code', this.res.statusCode);
      up.end();
    }
    const span = this.span;
    span.updateName(`${this.method} ${o.route}`);
    span.setAttribute('http.route', o.route);
    span.setAttribute('http.response.status_code', status);
    if (o.code !== null) span.setAttribute('keygate.refusal_code', o.code);
    if (o.organizationId !== null) span.setAttribute('keygate.organization_id', o.organizationId);
    if (o.keyId !== null) span.setAttribute('keygate.key_id', o.keyId);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}

/** The client's `tracestate` travels only with the trace it belongs to (a valid incoming `traceparent`). */
function setTraceState(headers: OutgoingHttpHeaders, state: string | undefined): void {
  if (state !== undefined && state !== '') headers.tracestate = state;
  else if (headers.tracestate !== undefined) delete headers.tracestate;
}

/** What a sampled request needs: the tracer, and how its resolver is built. */
class SampledTracing<R extends TraceableResolver> {
  factory: ResolverFactory<R> | null = null;
  constructor(readonly tracer: Tracer) {}

  /** `fn` inside a child span of `parent`; a rejection marks the span and passes on. */
  async within<T>(parent: Context, name: string, fn: () => Promise<T>, onResult: (span: Span, r: T) => void) {
    const span = this.tracer.startSpan(name, { kind: SpanKind.INTERNAL }, parent);
    try {
      const result = await fn();
      onResult(span, result);
      span.end();
      return result;
    } catch (err) {
      fail(span, err);
      throw err;
    }
  }

  /** The limit stores with each round trip a `keygate.rate_limit` span under `parent` (a fresh object: the gateway's stay as they are). */
  tracedStores<S extends TraceableStores>(s: S, parent: Context): S {
    return overriding<S, TraceableStores>(s, {
      gate: (r: never) =>
        this.within(
          parent,
          'keygate.rate_limit',
          () => s.gate(r),
          (span, g) => span.setAttributes({ 'keygate.rate_limit.op': 'gate', 'keygate.rate_limit.outcome': g.kind }),
        ),
      limiter: {
        spend: (counters: never, cost: number) =>
          this.within(
            parent,
            'keygate.rate_limit',
            () => s.limiter.spend(counters, cost),
            (span) => span.setAttribute('keygate.rate_limit.op', cost === 0 ? 'peek' : 'spend'),
          ),
      },
    });
  }

  /** A sampled request's resolver: one `keygate.access` span around the gateway's own resolver. */
  tracedAccess(parent: Context): R | null {
    const make = this.factory;
    if (make === null) return null;
    const traced: TraceableResolver = {
      resolve: async (...args) => {
        const span = this.tracer.startSpan('keygate.access', { kind: SpanKind.INTERNAL }, parent);
        try {
          const r: TracedResolution = await make(span, trace.setSpan(parent, span)).resolve(...args);
          span.setAttribute('keygate.access.outcome', r.kind);
          if (r.kind === 'resolved' && r.principal !== undefined) {
            span.setAttribute('keygate.organization_id', r.principal.organizationId);
            span.setAttribute('keygate.key_id', r.principal.keyId);
          }
          span.end();
          return r;
        } catch (err) {
          fail(span, err);
          throw err;
        }
      },
    };
    // One method, taking the gateway resolver's arguments and giving back its very result: it is an R.
    return traced as R;
  }
}

/**
 * `target` with some members replaced; the others are the target's, reached through the prototype, so
 * they stay its own (methods and closures alike) whatever else the target holds.
 */
function overriding<T extends U, U extends object>(target: T, members: Partial<U>): T {
  return Object.assign(Object.create(target) as T, members);
}

function fail(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.name ?? 'error' });
  span.end();
}

export function createTracing<R extends TraceableResolver>(o: TracingOptions): Tracing<R> {
  // The trace id a root span must take: the one its sampling decision was made on.
  let rootTraceId: string | null = null;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': o.serviceName }),
    // The decision is made in `request`, before the span: only sampled requests reach the SDK.
    sampler: new AlwaysOnSampler(),
    idGenerator: {
      generateTraceId() {
        const id = rootTraceId ?? randomHex(16);
        rootTraceId = null;
        return id;
      },
      generateSpanId: () => randomHex(8),
    },
    spanProcessors: [o.processor],
  });
  const sampled = new SampledTracing<R>(provider.getTracer('keygate'));
  const sampler = o.sampler;

  return {
    request(req, res, method, requestId) {
      let parentContext = ROOT_CONTEXT;
      let parent: SpanContext | undefined;
      // Only a head that names a trace pays for parsing it; `extract` keeps only a valid one.
      if (req.headers.traceparent !== undefined) {
        parentContext = propagator.extract(ROOT_CONTEXT, req.headers, headerGetter);
        parent = trace.getSpanContext(parentContext);
      }
      const traceId = parent?.traceId ?? randomHex(16);
      const traceState = parent?.traceState?.serialize();
      const decision = sampler.shouldSample(parentContext, traceId, method, SpanKind.SERVER, NO_ATTRIBUTES, NO_LINKS);
      if (decision.decision !== SamplingDecision.RECORD_AND_SAMPLED)
        return new UnsampledTrace(traceId, parent?.spanId ?? randomHex(8), traceState);
      if (parent === undefined) rootTraceId = traceId;
      const span = sampled.tracer.startSpan(
        method,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'keygate.request_id': requestId } },
        parentContext,
      );
      return new SampledTrace(sampled, span, trace.setSpan(parentContext, span), res, method, traceState);
    },

    resolvers(make, stores, events) {
      sampled.factory = (span, spanContext) =>
        make(
          sampled.tracedStores(stores, spanContext),
          overriding<typeof events, TraceableEvents>(events, {
            cache(hit) {
              span.setAttribute('keygate.access.source', hit ? 'cache' : 'database');
              events.cache(hit);
            },
          }),
        );
    },

    close: () => provider.shutdown(),
  };
}

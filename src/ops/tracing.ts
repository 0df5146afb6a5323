// OpenTelemetry tracing of the gateway, on only when an OTLP endpoint is configured (the standard
// OTEL_* variables). Off, nothing here runs: no tracer, no span object, no context storage, and the
// gateway's objects are the unwrapped ones.
//
// On, every request gets a SERVER span (an incoming valid `traceparent`/`tracestate` is continued,
// otherwise a trace starts), and inside it:
// - `keygate.access`: steps 3 to 11 through the access resolver, with `keygate.access.source`
//   `cache` or `database`;
// - `keygate.rate_limit`: each round trip to the limit store (the gate for a cached principal, the
//   counters after a database lookup);
// - `keygate.upstream`: the exchange with the upstream (CLIENT), whose context travels upstream in
//   `traceparent`, so the upstream's parent is this span.
// The spans carry the route template, the status, the refusal code, the organization and key ids and
// the request id: never a secret, a header value or the query string.
//
// No context storage: a sampled request carries its own access resolver, built over stores and events
// that open their spans under its span explicitly (the gateway's pipelines call `span.access` when it
// is there); the upstream span finds the request's context from the response object. An unsampled
// request gets ids and propagates them upstream, and nothing else. (An AsyncLocalStorage would put
// promise hooks on every promise of the process as soon as one request was sampled.)
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { Forwarder, UpstreamRequest } from '../gateway/forward.js';
import type { AccessResolver, ResolverEvents } from '../access/resolver.js';
import type { SharedStores } from '../limits/types.js';

/** What the request span says once the request is answered (the pipeline's notes, see gateway/context.ts). */
export interface RequestOutcome {
  route: string;
  status: number;
  code: string | null;
  organizationId: number | null;
  keyId: number | null;
}

export interface RequestTrace {
  /** The trace id, for the access log line. */
  readonly traceId: string;
  /** A sampled request's own resolver, whose work appears as child spans; null when not sampled. */
  readonly access: AccessResolver | null;
  end(outcome: RequestOutcome): void;
}

export interface Tracing {
  /** Start the request's span from its head (continuing a valid incoming `traceparent`). */
  request(req: IncomingMessage, res: ServerResponse, method: string, requestId: string): RequestTrace;
  /**
   * How a sampled request's resolver is made (the gateway's own factory), over the gateway's stores
   * and events; until this is called no request gets one.
   */
  resolvers(
    make: (stores: SharedStores, events: ResolverEvents) => AccessResolver,
    stores: SharedStores,
    events: ResolverEvents,
  ): void;
  /** The forwarder whose exchanges appear as child spans and carry `traceparent` upstream. */
  forwarder(forwarder: Forwarder): Forwarder;
  /** Export what is buffered and stop. */
  close(): Promise<void>;
}

const propagator = new W3CTraceContextPropagator();
const headerGetter: TextMapGetter<IncomingMessage['headers']> = {
  keys: (h) => Object.keys(h),
  get: (h, key) => h[key],
};

/** Is tracing configured? The standard variables: an OTLP endpoint, and not disabled. */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').toLowerCase() === 'true') return false;
  if ((env.OTEL_TRACES_EXPORTER ?? 'otlp').toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Tracing from the environment, or null when it is not configured. The sampler comes from
 * `OTEL_TRACES_SAMPLER`/`OTEL_TRACES_SAMPLER_ARG` (default parent-based always-on), the service name
 * from `OTEL_SERVICE_NAME` (default `keygate`), the endpoint and headers from `OTEL_EXPORTER_OTLP_*`
 * (OTLP/HTTP with JSON bodies), all read by the SDK itself.
 */
export function createTracingFromEnv(env: NodeJS.ProcessEnv = process.env, exporter?: SpanExporter): Tracing | null {
  if (!exporter && !tracingConfigured(env)) return null;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'keygate' }),
    spanProcessors: [new BatchSpanProcessor(exporter ?? new OTLPTraceExporter())],
  });
  return createTracing(provider.getTracer('keygate'), () => provider.shutdown());
}

export function createTracing(tracer: Tracer, shutdown: () => Promise<void>): Tracing {
  // The request context of each response, for the upstream span (sampled or not).
  const contexts = new WeakMap<ServerResponse, Context>();
  let factory: {
    make: (stores: SharedStores, events: ResolverEvents) => AccessResolver;
    stores: SharedStores;
    events: ResolverEvents;
  } | null = null;

  const finish = (span: Span, err?: unknown) => {
    if (err !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.name ?? 'error' });
    span.end();
  };

  /** `fn` inside a child span of `parent`; a rejection marks the span and passes on. */
  async function within<T>(
    parent: Context,
    name: string,
    fn: () => Promise<T>,
    onResult?: (span: Span, result: T) => void,
  ): Promise<T> {
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL }, parent);
    try {
      const result = await fn();
      onResult?.(span, result);
      finish(span);
      return result;
    } catch (err) {
      finish(span, err);
      throw err;
    }
  }

  /** The limit stores with each round trip a `keygate.rate_limit` span under `parent`. */
  function tracedStores(stores: SharedStores, parent: Context): SharedStores {
    const limiter = stores.limiter;
    const tracedLimiter: typeof limiter = Object.create(limiter, {
      spend: {
        value: (counters: Parameters<typeof limiter.spend>[0], cost: Parameters<typeof limiter.spend>[1]) =>
          within(
            parent,
            'keygate.rate_limit',
            () => limiter.spend(counters, cost),
            (span) => span.setAttribute('keygate.rate_limit.op', cost === 0 ? 'peek' : 'spend'),
          ),
      },
    });
    // Own properties over the store's (defined, not assigned: a getter on the store's side cannot refuse them).
    return Object.create(stores, {
      gate: {
        value: (r: Parameters<SharedStores['gate']>[0]) =>
          within(
            parent,
            'keygate.rate_limit',
            () => stores.gate(r),
            (span, g) => span.setAttributes({ 'keygate.rate_limit.op': 'gate', 'keygate.rate_limit.outcome': g.kind }),
          ),
      },
      limiter: { value: tracedLimiter },
    }) as SharedStores;
  }

  /** A sampled request's resolver: one `keygate.access` span around the gateway's own resolver. */
  function tracedAccess(parent: Context): AccessResolver | null {
    const f = factory;
    if (f === null) return null;
    return {
      async resolve(secret, accepted, ip, plan) {
        const span = tracer.startSpan('keygate.access', { kind: SpanKind.INTERNAL }, parent);
        const events: ResolverEvents = {
          cache(hit) {
            span.setAttribute('keygate.access.source', hit ? 'cache' : 'database');
            f.events.cache(hit);
          },
          authFailure: (kind) => f.events.authFailure(kind),
        };
        try {
          const r = await f
            .make(tracedStores(f.stores, trace.setSpan(parent, span)), events)
            .resolve(secret, accepted, ip, plan);
          span.setAttribute('keygate.access.outcome', r.kind);
          if (r.kind === 'resolved') {
            span.setAttribute('keygate.organization_id', r.principal.organizationId);
            span.setAttribute('keygate.key_id', r.principal.keyId);
          }
          finish(span);
          return r;
        } catch (err) {
          finish(span, err);
          throw err;
        }
      },
    };
  }

  return {
    request(req, res, method, requestId) {
      const parent =
        req.headers.traceparent === undefined
          ? ROOT_CONTEXT
          : propagator.extract(ROOT_CONTEXT, req.headers, headerGetter);
      const span = tracer.startSpan(
        method,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'keygate.request_id': requestId } },
        parent,
      );
      const ctx = trace.setSpan(parent, span);
      contexts.set(res, ctx);
      const sc = span.spanContext();
      const sampled = (sc.traceFlags & TraceFlags.SAMPLED) !== 0;
      return {
        traceId: sc.traceId,
        access: sampled ? tracedAccess(ctx) : null,
        end(o) {
          if (!sampled) return;
          span.updateName(`${method} ${o.route}`);
          span.setAttribute('http.route', o.route);
          span.setAttribute('http.response.status_code', o.status);
          if (o.code !== null) span.setAttribute('keygate.refusal_code', o.code);
          if (o.organizationId !== null) span.setAttribute('keygate.organization_id', o.organizationId);
          if (o.keyId !== null) span.setAttribute('keygate.key_id', o.keyId);
          if (o.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },

    resolvers(make, stores, events) {
      factory = { make, stores, events };
    },

    forwarder(forwarder) {
      const setter = { set: (h: UpstreamRequest['headers'], k: string, v: string) => void (h[k] = v) };
      return {
        forward(request, res, onFail, done) {
          const parent = contexts.get(res);
          if (parent === undefined) return forwarder.forward(request, res, onFail, done);
          // A client's own trace fields are replaced by the gateway's.
          delete request.headers.traceparent;
          delete request.headers.tracestate;
          const parentSpan = trace.getSpan(parent)!;
          if ((parentSpan.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) {
            // Not sampled: no span of our own, the ids still travel (flags 00) so the upstream agrees.
            propagator.inject(parent, request.headers, setter);
            return forwarder.forward(request, res, onFail, done);
          }
          const span = tracer.startSpan(
            'keygate.upstream',
            { kind: SpanKind.CLIENT, attributes: { 'http.request.method': request.method } },
            parent,
          );
          propagator.inject(trace.setSpan(parent, span), request.headers, setter);
          let failed: string | null = null;
          // The span covers the whole exchange, to the end of the answer (the forwarder's `done` comes at its head).
          res.once('close', () => {
            if (failed !== null) {
              span.setAttribute('error.type', failed);
              span.setStatus({ code: SpanStatusCode.ERROR, message: failed });
            } else if (res.headersSent) span.setAttribute('http.response.status_code', res.statusCode);
            span.end();
          });
          forwarder.forward(
            request,
            res,
            (kind) => {
              failed = kind;
              onFail(kind);
            },
            done,
          );
        },
        close: () => forwarder.close(),
      };
    },

    close: shutdown,
  };
}

// OpenTelemetry tracing of the gateway, on only when an OTLP endpoint is configured (the standard
// OTEL_* variables). This module is all a gateway loads when it is not: the check of the settings and
// the shapes the gateway calls. Off, nothing runs per request (the request path tests one null
// field), and the SDK and the exporter are never imported: they are loaded from ./tracing-otel.ts,
// which describes what is traced and how sampling is decided, only when tracing is configured.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { AccessResolver, ResolverEvents } from '../access/resolver.js';
import type { SharedStores } from '../limits/types.js';

/** What the request span says once the request is answered (the pipeline's notes, see gateway/context.ts). */
export interface RequestOutcome {
  route: string;
  code: string | null;
  organizationId: number | null;
  keyId: number | null;
}

export interface RequestTrace {
  /** The trace id, for the access log line (sampled or not). */
  readonly traceId: string;
  /** A sampled request's own resolver, whose work appears as child spans; null when not sampled. */
  readonly access: AccessResolver | null;
  /**
   * Just before the request is forwarded: its `traceparent` (and the client's `tracestate`, when it
   * came with a valid trace) in the upstream request's fields; a sampled request's upstream span starts.
   */
  upstream(headers: OutgoingHttpHeaders): void;
  /** The outcome is the pipeline's own object, read here: no copy per request. */
  end(outcome: RequestOutcome, status: number): void;
}

export interface Tracing {
  /** The request's trace from its head (continuing a valid incoming `traceparent`), sampled or not. */
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
  /** Export what is buffered and stop. */
  close(): Promise<void>;
}

/** Is tracing configured? The standard variables: an OTLP endpoint, and not disabled. */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').toLowerCase() === 'true') return false;
  if ((env.OTEL_TRACES_EXPORTER ?? 'otlp').toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Tracing from the environment (./tracing-otel.ts, `tracingFromEnv`), or null when it is not
 * configured; with `exporter` (tests) it is on whatever the environment says.
 */
export async function createTracingFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  exporter?: SpanExporter,
): Promise<Tracing | null> {
  if (!exporter && !tracingConfigured(env)) return null;
  const { tracingFromEnv } = await import('./tracing-otel.js');
  return tracingFromEnv(env, exporter);
}

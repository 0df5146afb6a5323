// OpenTelemetry tracing of the gateway, on only when an OTLP endpoint is configured (the standard
// OTEL_* variables). This module is all a gateway loads when it is not: the check of the settings and
// the shapes the gateway calls. Off, nothing runs per request (the request path tests one null
// field), and the SDK and the exporter are never imported: they are loaded from ./tracing-otel.ts,
// which describes what is traced and how sampling is decided, only when tracing is configured.
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TraceableResolver, Tracing } from './tracing-types.js';

export type * from './tracing-types.js';

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
export async function createTracingFromEnv<R extends TraceableResolver>(
  env: NodeJS.ProcessEnv = process.env,
  exporter?: SpanExporter,
): Promise<Tracing<R> | null> {
  if (!exporter && !tracingConfigured(env)) return null;
  const { tracingFromEnv } = await import('./tracing-otel.js');
  return tracingFromEnv<R>(env, exporter);
}

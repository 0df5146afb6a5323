// The shapes of tracing (./tracing.ts): what the gateway calls per request, and the little tracing must
// know of what it wraps for a sampled request. Tracing is in the foundation and the access resolver and
// the limit stores are above it, so it names them by the members it uses only; the gateway's resolver,
// stores and events fit these shapes structurally, and the gateway names its resolver's type once
// (`Tracing<AccessResolver>`), so a sampled request's resolver keeps it.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** What the request span says once the request is answered (the pipeline's notes, see gateway/context.ts). */
export interface RequestOutcome {
  route: string;
  code: string | null;
  organizationId: number | null;
  keyId: number | null;
}

/** What the `keygate.access` span reads of a resolution: its outcome and, resolved, whose key it was. */
export interface TracedResolution {
  kind: string;
  principal?: { organizationId: number; keyId: number };
}

/**
 * A resolver tracing can wrap: one method, whose arguments it passes through and whose result it
 * reads (access/resolver.ts's `AccessResolver` is one).
 */
export interface TraceableResolver {
  resolve(...args: never[]): Promise<TracedResolution>;
}

/** The store round trips a sampled request's `keygate.rate_limit` spans time (limits/ `SharedStores` has them). */
export interface TraceableStores {
  gate(req: never): Promise<{ kind: string }>;
  limiter: { spend(counters: never, cost: number): Promise<unknown> };
}

/** The resolver's event the `keygate.access` span records (the others pass through untouched). */
export interface TraceableEvents {
  cache(hit: boolean): void;
}

export interface RequestTrace<R extends TraceableResolver> {
  /** The trace id, for the access log line (sampled or not). */
  readonly traceId: string;
  /** A sampled request's own resolver, whose work appears as child spans; null when not sampled. */
  readonly access: R | null;
  /**
   * Just before the request is forwarded: its `traceparent` (and the client's `tracestate`, when it
   * came with a valid trace) in the upstream request's fields; a sampled request's upstream span starts.
   */
  upstream(headers: OutgoingHttpHeaders): void;
  /** The outcome is the pipeline's own object, read here: no copy per request. */
  end(outcome: RequestOutcome, status: number): void;
}

export interface Tracing<R extends TraceableResolver> {
  /** The request's trace from its head (continuing a valid incoming `traceparent`), sampled or not. */
  request(req: IncomingMessage, res: ServerResponse, method: string, requestId: string): RequestTrace<R>;
  /**
   * How a sampled request's resolver is made (the gateway's own factory), over the gateway's stores
   * and events; until this is called no request gets one.
   */
  resolvers<S extends TraceableStores, E extends TraceableEvents>(
    make: (stores: S, events: E) => R,
    stores: S,
    events: E,
  ): void;
  /** Export what is buffered and stop. */
  close(): Promise<void>;
}

// The decision service's listeners (docs/forward-auth.md), opened beside the gateway's when their
// settings are set: DECISION_PORT, the HTTP protocols (./http.ts: nginx auth_request, Traefik
// ForwardAuth, Envoy's HTTP external authorization, the verify API); DECISION_GRPC_PORT, Envoy's gRPC
// external authorization (./grpc.ts). Both run the gateway's pipeline on the gateway's dependencies.
import type { GatewayDeps } from '../gateway/context.js';
import { listenOn } from '../app/listen.js';
import { drainable } from '../ops/drain.js';
import type { AppParts, Closer } from '../app/types.js';

export interface DecisionListeners {
  /** The HTTP decision service's URL, or null when DECISION_PORT is unset. */
  decisionUrl: string | null;
  /** The gRPC service's address (host:port), or null when DECISION_GRPC_PORT is unset. */
  decisionGrpcAddress: string | null;
  /** Run with the gateway's drain: stop taking requests, answer those in flight. */
  first: Closer[];
}

export async function openDecisionListeners(
  o: AppParts & { deps: GatewayDeps; port(p: number): number },
): Promise<DecisionListeners> {
  const s = o.app.settings;
  const out: DecisionListeners = { decisionUrl: null, decisionGrpcAddress: null, first: [] };
  if (s.DECISION_PORT !== undefined) {
    const { createDecisionServer } = await import('./http.js');
    const srv = createDecisionServer(o.deps);
    out.decisionUrl = await listenOn(srv, o.port(s.DECISION_PORT), s.DECISION_HOST, 'DECISION_PORT');
    const drain = drainable(srv);
    out.first.push(() => drain.drain(o.drainMs()));
  }
  if (s.DECISION_GRPC_PORT !== undefined) {
    const { startGrpcDecision } = await import('./grpc.js');
    const grpc = await startGrpcDecision(o.deps, { host: s.DECISION_HOST, port: o.port(s.DECISION_GRPC_PORT) });
    out.decisionGrpcAddress = grpc.address;
    out.first.push(() => grpc.close(o.drainMs()));
  }
  return out;
}

// Envoy's gRPC external authorization: filled in by the gRPC work (docs/forward-auth.md).
import type { GatewayDeps } from '../gateway/context.js';

export interface GrpcDecision {
  /** host:port it listens on. */
  address: string;
  /** Stop taking calls; those in flight are answered within `ms`. */
  close(ms: number): Promise<void>;
}

export async function startGrpcDecision(
  deps: GatewayDeps,
  where: { host: string; port: number },
): Promise<GrpcDecision> {
  void deps;
  throw new Error(`gRPC decision service not built yet (${where.host}:${where.port})`);
}

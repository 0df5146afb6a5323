// The HTTP decision service: filled in by the forward-auth work (docs/forward-auth.md).
import http from 'node:http';
import type { GatewayDeps } from '../gateway/context.js';

export function createDecisionServer(deps: GatewayDeps): http.Server {
  void deps;
  return http.createServer((_req, res) => {
    res.writeHead(501).end();
  });
}

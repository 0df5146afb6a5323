// Scenario 2's baseline: a minimal http-proxy-3 pass-through over a keep-alive agent, no checks.
// The agent options are the gateway's (src/gateway/upstream-client.ts, which forwards over node:http), so the ratio
// gateway/bare proxy measures what the gateway's checks cost and nothing else.
import http from 'node:http';
import { createProxyServer } from 'http-proxy-3';

export function createBareProxy(upstream: string): { server: http.Server; close(): Promise<void> } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, keepAliveMsecs: 30_000 });
  const proxy = createProxyServer({ target: upstream, agent, xfwd: false, changeOrigin: false });
  proxy.on('error', (_err: Error, _req: http.IncomingMessage, res: unknown) => {
    const r = res as http.ServerResponse;
    if (r.headersSent) return void r.destroy();
    r.writeHead(502, { 'content-type': 'application/json' });
    r.end('{"error":"bad_gateway"}');
  });
  const server = http.createServer((req, res) => proxy.web(req, res));
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        agent.destroy();
        proxy.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

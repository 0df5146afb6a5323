// Forwarding with http-proxy-3 over a keep-alive agent. The caller has already rewritten the headers;
// this module only moves bytes and maps upstream failures to contract answers.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';

export type UpstreamFailure = 'bad_gateway' | 'gateway_timeout';

export interface Forwarder {
  forward(req: IncomingMessage, res: ServerResponse, body: Buffer | null, onFail: (kind: UpstreamFailure) => void): void;
  close(): void;
}

const FORWARD = Symbol('keygate.forward');
type Forwarded = IncomingMessage & { [FORWARD]?: { onFail: (kind: UpstreamFailure) => void; started: number; timedOut: boolean } };

export function createForwarder(upstream: string, timeoutMs: number, observe?: (seconds: number) => void): Forwarder {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, keepAliveMsecs: 30_000 });
  const proxy = createProxyServer({ target: upstream, agent, xfwd: false, changeOrigin: false });
  proxy.on('proxyReq', (proxyReq: http.ClientRequest, req: IncomingMessage) => {
    proxyReq.setTimeout(timeoutMs, () => {
      const f = (req as Forwarded)[FORWARD];
      if (f) f.timedOut = true;
      proxyReq.destroy();
    });
  });
  proxy.on('proxyRes', (proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse) => {
    const f = (req as Forwarded)[FORWARD];
    if (f && observe) observe((performance.now() - f.started) / 1000);
    // An upstream that resets mid-response: the status line is already sent, so the only clean
    // answer is to close the client's connection rather than leave it waiting for the rest.
    proxyRes.on('error', () => res.destroy());
    proxyRes.on('close', () => {
      if (!proxyRes.complete) res.destroy();
    });
  });
  proxy.on('error', (err: Error, req: IncomingMessage, res: unknown) => {
    const r = res as ServerResponse;
    const f = (req as Forwarded)[FORWARD];
    if (r.headersSent || !f) {
      // Mid-response: the status line is gone; close the client connection cleanly.
      r.destroy?.();
      return;
    }
    f.onFail(f.timedOut || (err as NodeJS.ErrnoException).code === 'ETIMEDOUT' ? 'gateway_timeout' : 'bad_gateway');
  });
  proxy.on('econnreset', (_err: Error, _req: IncomingMessage, res: unknown) => {
    (res as ServerResponse).destroy?.();
  });

  return {
    forward(req, res, body, onFail) {
      // Per-request state on the request itself: a WeakMap entry per request costs the GC more.
      (req as Forwarded)[FORWARD] = { onFail, started: performance.now(), timedOut: false };
      if (body) proxy.web(req, res, { buffer: Readable.from([body]) });
      else proxy.web(req, res);
    },
    close() {
      agent.destroy();
      proxy.close();
    },
  };
}

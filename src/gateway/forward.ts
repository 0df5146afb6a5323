// Forwarding over node:http with a keep-alive agent. The request target is sent exactly as it was
// authorized and signed (no URL parser re-serialises it), every forwarded request is bounded by
// UPSTREAM_TIMEOUT_MS from the moment it is handed over (waiting for a pooled socket included), and
// the response head is cleaned: hop-by-hop fields and the fields the gateway owns (its rate-limit
// headers, Retry-After, X-Request-Id) never come from the upstream.
import http, { type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';

export type UpstreamFailure = 'bad_gateway' | 'gateway_timeout';

export interface UpstreamRequest {
  method: string;
  /** Origin-form target: path and query exactly as authorized and signed. */
  target: string;
  headers: OutgoingHttpHeaders;
  body: Buffer | null;
}

export interface Forwarder {
  /** Forward and stream the answer into `res`; `onFail` answers when nothing was sent yet. `done` runs once either way. */
  forward(request: UpstreamRequest, res: ServerResponse, onFail: (kind: UpstreamFailure) => void, done?: () => void): void;
  close(): void;
}

export interface ForwarderOptions {
  upstream: string;
  timeoutMs: number;
  maxSockets: number;
  /** CORS is on: the Access-Control-* response fields are the gateway's, not the upstream's. */
  ownCors?: boolean;
  /** Seconds from handing the request over to the response head. */
  observe?(seconds: number): void;
}

/** Response fields that describe one connection (RFC 9110 section 7.6.1) or that only the gateway may set. */
const RESPONSE_DROPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'x-request-id', 'ratelimit', 'ratelimit-policy']);

/** Header names listed in a Connection field: hop-by-hop by declaration (RFC 9110 section 7.6.1). */
export function connectionOptions(value: string | string[] | undefined): Set<string> | null {
  if (value === undefined) return null;
  const out = new Set<string>();
  for (const token of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '') out.add(name);
  }
  return out;
}

/** Copy the upstream's response fields the client may see. */
function copyResponseHeaders(upstream: IncomingMessage, res: ServerResponse, ownCors: boolean): void {
  const named = connectionOptions(upstream.headers.connection);
  const status = upstream.statusCode ?? 502;
  for (const name in upstream.headers) {
    if (RESPONSE_DROPPED.has(name) || name.startsWith('x-ratelimit-') || named?.has(name)) continue;
    if (ownCors && name.startsWith('access-control-')) continue;
    if (ownCors && name === 'vary') {
      res.setHeader('vary', `Origin, ${upstream.headers.vary}`);
      continue;
    }
    // Retry-After belongs to the gateway's own 429s; an upstream's 503 may still say when it is back.
    if (name === 'retry-after' && status !== 503) continue;
    res.setHeader(name, upstream.headers[name]!);
  }
}

export function createForwarder(options: ForwarderOptions): Forwarder {
  const base = new URL(options.upstream);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: 64, keepAliveMsecs: 30_000, scheduling: 'lifo' });
  const basePath = base.pathname === '/' ? '' : base.pathname.replace(/\/$/, '');

  return {
    forward(request, res, onFail, done) {
      const started = performance.now();
      let finished = false;
      let headReceived = false;
      let timedOut = false;
      const end = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        done?.();
      };
      const upstreamReq = http.request({
        agent,
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        method: request.method,
        path: basePath + request.target,
        headers: request.headers,
        // The client's Host is forwarded as it came (the upstream may route on it).
        setHost: request.headers.host === undefined,
      });
      // Bounded from the moment it is handed over: a queued request waits for a socket inside this.
      const timer = setTimeout(() => {
        timedOut = true;
        upstreamReq.destroy(new Error('upstream timeout'));
      }, options.timeoutMs);

      upstreamReq.on('response', (upstreamRes) => {
        headReceived = true;
        clearTimeout(timer);
        if (res.headersSent || res.destroyed) {
          // Answered meanwhile (the drain's deadline) or the client is gone: nothing to relay.
          upstreamReq.destroy();
          return end();
        }
        options.observe?.((performance.now() - started) / 1000);
        copyResponseHeaders(upstreamRes, res, options.ownCors === true);
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage);
        // While the body streams, a silent upstream is bounded by the same timeout, between chunks.
        upstreamReq.setTimeout(options.timeoutMs, () => upstreamReq.destroy(new Error('upstream idle')));
        upstreamRes.on('error', () => res.destroy());
        upstreamRes.on('close', () => {
          // A reset after the head: the status line is gone, so the only clean answer is to close.
          if (!upstreamRes.complete) res.destroy();
          end();
        });
        upstreamRes.pipe(res);
      });
      upstreamReq.on('error', (err: NodeJS.ErrnoException) => {
        if (headReceived) {
          res.destroy();
          return end();
        }
        clearTimeout(timer);
        if (!res.headersSent && !res.destroyed) onFail(timedOut || err.code === 'ETIMEDOUT' ? 'gateway_timeout' : 'bad_gateway');
        else res.destroy();
        end();
      });
      // The client went away: the upstream need not finish the work for nobody.
      res.on('close', () => {
        if (!res.writableFinished) upstreamReq.destroy();
        end();
      });
      upstreamReq.end(request.body ?? undefined);
    },
    close() {
      agent.destroy();
    },
  };
}

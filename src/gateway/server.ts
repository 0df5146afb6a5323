// The gateway listener. Read this file first, then ./pipeline.ts (the phases every interface of the profile
// runs, one guard per file under ./guards/; ./interfaces.ts what each interface chooses), and
// ./forward-authorized.ts (signing and forwarding).
// Here: the request line (absolute-form targets reduced to their path, RFC 9112 section 3.2.2), the
// request id and client address, metrics and the access log, dependency failures as 503, the drain.
// An `Upgrade: websocket` request takes the same path, its answers written on its socket, and once
// admitted is tunnelled (./websocket.ts); any other Upgrade is refused.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ENVELOPE_A, envelopeB } from '../http/errors.js';
import { accessLogWriter, type AccessLogSource } from '../ops/logger.js';
import { drainable, type Drainable } from '../ops/drain.js';
import { LiveList } from '../ops/live-list.js';
import type { GatewayDeps, RequestContext } from './context.js';
import { clientIp } from '../http/client-ip.js';
import { refuse, sendJson, unavailableRefusal } from './answers.js';
import { pipeline } from './pipeline.js';
import { interfaceFor, interfacesOf } from './interfaces.js';
import { announcesBody } from './body-read.js';
import { lingerAfterAnswer } from './linger.js';
import { requestIdOf } from '../config/contract.js';
import { defaultTunnelBound, descriptorLimit } from '../ops/connection-limits.js';
import { DRAIN_CLOSE, Tunnels, isWebSocketUpgrade } from './websocket.js';

export type { GatewayDeps } from './context.js';

export interface GatewayServer extends Drainable {
  server: http.Server;
  /** The open WebSocket tunnels (./websocket.ts). */
  tunnels: Tunnels;
}

export function createGatewayServer(deps: GatewayDeps): GatewayServer {
  const inFlight = new LiveList<RequestContext>();
  const writeAccess = deps.accessLog ? accessLogWriter(deps.log) : null;
  // Slow heads are found within a second of their timeout, not node's default 30 s sweep.
  const server = http.createServer({ connectionsCheckingInterval: 1_000 });
  const drain = drainable(server, 'reported');
  const tunnels = new Tunnels(
    deps,
    deps.websocket?.maxTunnels ?? defaultTunnelBound(descriptorLimit()),
    deps.websocket?.recheckMs,
  );
  /** A request's context, in flight until its response closes; `opened()` says a tunnel counted it already. */
  const begin = (req: IncomingMessage, res: ServerResponse, upgrade: Upgrade | null, opened?: () => boolean) => {
    drain.began(req, res);
    const ctx = contextOf(deps, req, res, upgrade);
    const entry = inFlight.add(ctx);
    // One listener per request: 'close' follows 'finish' on every response, and comes alone when the
    // client went away first (then there is no answer to count).
    res.on('close', () => {
      drain.ended(req);
      inFlight.delete(entry);
      if (opened?.()) return;
      if (res.writableFinished) recordAnswer(deps, ctx, writeAccess);
      ctx.span?.end(ctx.trace, res.writableFinished ? res.statusCode : 499);
    });
    return ctx;
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    // An answer given before its body was read (a refusal) lingers before the connection closes.
    if (announcesBody(req)) lingerAfterAnswer(req, deps.linger);
    serve(deps, begin(req, res, null));
  };
  server.on('request', onRequest);
  // `Expect: 100-continue` is answered by the gateway itself, once the guards passed (./body-read.ts); it
  // is never forwarded, so no upstream can hold the request open waiting for a body.
  server.on('checkContinue', onRequest);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const res = upgradeResponse(req, socket);
    // An Upgrade the gateway does not speak (h2c, which `curl --http2` offers) is ignored, as RFC 9110
    // section 7.8 lets a server: the request is served as HTTP/1.1, its connection closed after the
    // answer (node:http parses nothing more on it). One with a body is refused below: node:http hands
    // its bytes over unparsed.
    if (!isWebSocketUpgrade(req) && !announcesBody(req)) return serve(deps, begin(req, res, null));
    let opened = false;
    const ctx = begin(req, res, { socket, head }, () => opened);
    // Counted once, as the 101 it is (./websocket.ts writes it), not at the tunnel's end.
    tunnels.expect(ctx, () => {
      opened = true;
      res.statusCode = 101;
      recordAnswer(deps, ctx, writeAccess);
      ctx.span?.end(ctx.trace, 101);
    });
    if (!isWebSocketUpgrade(req))
      return refuse(ctx, {
        code: 'invalid_request',
        message:
          'Only Upgrade: websocket (a GET without a body) is served; send a request with a body without Upgrade.',
      });
    if (drain.draining)
      return refuse(ctx, {
        code: 'service_unavailable',
        message: 'The gateway is shutting down; connect again.',
        retryAfter: 1,
      });
    serve(deps, ctx);
  });
  server.keepAliveTimeout = 65_000;
  // A head takes at most 10 s: a connection sending it slowly holds a descriptor (src/ops/connection-limits.ts).
  server.headersTimeout = 10_000;
  // A backstop behind the body timeout of ./body-read.ts, for bodies nobody reads (refused requests).
  server.requestTimeout = 20_000 + deps.bodyTimeoutMs;
  return {
    server,
    tunnels,
    get draining() {
      return drain.draining;
    },
    drain: (ms) => {
      // Requests already in flight close their connection once answered, as later ones do.
      for (const ctx of inFlight.values()) if (!ctx.res.headersSent) ctx.res.setHeader('connection', 'close');
      return drain.drain(ms, () => {
        // Open tunnels close with 1001 (RFC 6455 section 7.4.1: going away), both ways.
        tunnels.closeAll(DRAIN_CLOSE.code, DRAIN_CLOSE.reason);
        // Still waiting for the upstream at the deadline: an answer rather than a reset.
        for (const ctx of inFlight.values()) {
          if (ctx.res.headersSent || tunnels.isOpen(ctx)) continue;
          refuse(ctx, {
            code: 'gateway_timeout',
            message: 'The gateway is shutting down and the upstream did not answer in time.',
          });
        }
      });
    },
  };
}

type Upgrade = NonNullable<RequestContext['upgrade']>;

/**
 * The response of an upgrade request, written on its socket: every refusal of the pipeline is then an
 * ordinary answer. node:http parses nothing more on that socket, so the answer is its last.
 */
function upgradeResponse(req: IncomingMessage, socket: Duplex): ServerResponse {
  // node:http took its own listeners off the socket: without one, an error on it would be thrown.
  socket.on('error', () => socket.destroy());
  const res = new http.ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  res.once('finish', () => (socket as Socket).destroySoon());
  return res;
}

/** A request of a served interface: CORS, then the interface's pipeline; its failures answered. */
function serve(deps: GatewayDeps, ctx: RequestContext): void {
  const { req, res } = ctx;
  // A CORS preflight is answered before any step, and counted and logged like any answer.
  if (deps.cors.preflight(req, res)) return void (ctx.trace.route = 'preflight');
  deps.cors.decorate(req, res);
  if (!ctx.served) return refuse(ctx, { code: 'not_found', message: 'No such route.' });
  dispatch(deps, ctx)?.catch((err: unknown) => answerFailure(deps, ctx, err));
}

/**
 * A pipeline that failed: a store the gateway cannot do without answers 503 (./answers.ts), anything
 * else 500 without its stack, logged once; an answer already begun is cut.
 */
export function answerFailure(deps: GatewayDeps, ctx: RequestContext, err: unknown): void {
  const { res } = ctx;
  try {
    // The outage itself is logged once per transition by the store's breaker, not once per request.
    const unavailable = res.headersSent ? null : unavailableRefusal(err);
    if (unavailable) return refuse(ctx, unavailable);
  } catch (failed) {
    err = failed;
  }
  deps.log.error(
    { requestId: ctx.requestId, err: (err as Error).message, stack: (err as Error).stack },
    'gateway request failed',
  );
  if (res.headersSent) res.destroy();
  else if (ctx.iface.spec.errors.format === 'problem')
    refuse(ctx, { code: 'internal_error', message: 'Internal error.' });
  else sendJson(ctx, 500, envelopeB('internal_error', 'Internal error.', ctx.requestId));
}

/** The request line and the client. */
function contextOf(
  deps: GatewayDeps,
  req: IncomingMessage,
  res: ServerResponse,
  upgrade: Upgrade | null,
): RequestContext {
  let target = req.url ?? '/';
  // An absolute-form target (RFC 9112 section 3.2.2) names its path after the authority.
  if (target[0] !== '/' && /^https?:\/\//i.test(target)) {
    const slash = target.indexOf('/', target.indexOf('//') + 2);
    target = slash === -1 ? '/' : target.slice(slash);
  }
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  const requestId = requestIdOf(req.headers);
  // Read off the interfaces directly: no object of its own per request.
  const interfaces = interfacesOf(deps.profile());
  const found = interfaceFor(interfaces, path);
  const iface = found ?? interfaces[0];
  return {
    req,
    res,
    api: iface.id,
    iface,
    served: found !== null,
    requestId,
    ip: clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trusted),
    method: req.method ?? 'GET',
    path,
    target,
    started: performance.now(),
    trace: { route: 'unmatched', code: null, organizationId: null, keyId: null },
    head: ['X-Request-Id', requestId],
    span: deps.tracing ? deps.tracing.request(req, res, req.method ?? 'GET', requestId) : null,
    upgrade,
  };
}

/** Metrics and the access line of an answered request. */
export function recordAnswer(
  deps: GatewayDeps,
  ctx: RequestContext,
  writeAccess: ((source: AccessLogSource) => void) | null,
): void {
  const ms = performance.now() - ctx.started;
  const { trace, res } = ctx;
  deps.metrics.request(trace.route, ctx.method, res.statusCode, codeLabel(ctx), ms);
  if (trace.organizationId !== null) deps.traffic?.(trace.organizationId, trace.code !== null);
  deps.usage?.(ctx.api, trace, res.statusCode);
  if (writeAccess)
    writeAccess({
      requestId: ctx.requestId,
      method: ctx.method,
      route: trace.route,
      status: res.statusCode,
      code: trace.code,
      ms,
      organizationId: trace.organizationId,
      keyId: trace.keyId,
      traceId: ctx.span?.traceId,
    });
}

/** The API description, or the interface's pipeline (its promise; a dependency's failure is answered by the caller). */
export function dispatch(deps: GatewayDeps, ctx: RequestContext): Promise<void> | undefined {
  try {
    // The API description: before any step, without a key and spending nothing (a client reads it
    // before it holds a key).
    const doc = ctx.method === 'GET' || ctx.method === 'HEAD' ? deps.openApi(ctx.path) : null;
    if (doc) {
      ctx.trace.route = ctx.path;
      ctx.head.push(
        'content-type',
        'application/json; charset=utf-8',
        'content-length',
        doc.length,
        'cache-control',
        'public, max-age=300',
      );
      ctx.res.writeHead(200, ctx.head);
      ctx.res.end(ctx.method === 'HEAD' ? undefined : doc);
      return undefined;
    }
    return pipeline(deps, ctx);
  } catch (err) {
    // Answered like a failure of the pipeline itself, never thrown into node:http's 'request' event.
    return Promise.reject(err);
  }
}

/**
 * The requests metric's code label: a refusal's code where the set is small and stable (the workspace
 * API's 6-digit codes, a problem-details profile's codes), else none.
 */
function codeLabel(ctx: RequestContext): string | null {
  const { code } = ctx.trace;
  if (code === null) return null;
  const { format } = ctx.iface.spec.errors;
  if (format === 'workspace') return code in ENVELOPE_A ? code : null;
  return format === 'problem' ? code : null;
}

// The HTTP decision service on DECISION_PORT (docs/forward-auth.md): keygate deciding for another proxy.
//   /auth          nginx auth_request and Traefik ForwardAuth (the request described in X-Original-* /
//                  X-Forwarded-* fields); nginx (X-Keygate-Proxy: nginx) gets a refusal as 401 plus a
//                  signed X-Keygate-Answer, which it sends back to
//   /answer        which renders it as the exact answer, spending nothing;
//   /envoy/<path>  Envoy's HTTP external authorization (path_prefix /envoy);
//   /verify        the verify API, JSON in and out, for callers that are not proxies (./verify-api.ts);
//   /healthz       the listener's own liveness.
// Every decision is decide() (./decide.ts): the gateway's own pipeline, spending what the same request
// through keygate's proxy spends. The listener is bounded as the gateway's is: heads within 10 s, its
// share of the descriptors; the peers are a few proxies, so one address may hold all of it.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { GatewayDeps } from '../gateway/context.js';
import type { ResponseFields } from '../gateway/fields.js';
import { ERROR_CODES, envelopeB, type CodeB } from '../http/errors.js';
import { requestIdOf } from '../config/contract.js';
import { boundConnections, defaultBounds, descriptorLimit, refusalLog } from '../ops/connection-limits.js';
import { describe } from './describe.js';
import { answerToken, readAnswerToken } from './answer-token.js';
import { announcesBody } from '../gateway/body-read.js';
import { verifyApi } from './verify-api.js';
import { decide as decideFor, type Decider } from './decide.js';

export function createDecisionServer(deps: GatewayDeps): http.Server {
  const decide: Decider = (r) => decideFor(deps, r);
  // Slow heads are found within a second of their timeout, as on the gateway's listener.
  const server = http.createServer({ connectionsCheckingInterval: 1_000 }, (req, res) => {
    handle(deps, decide, req, res).catch((err: unknown) => failed(deps, req, res, err));
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 10_000;
  // Only /verify reads a body, of at most VERIFY_BODY_MAX bytes: 20 s is a generous backstop.
  server.requestTimeout = 20_000;
  const share = defaultBounds(descriptorLimit()).gateway.max;
  boundConnections(
    server,
    'decision',
    { max: share, perAddress: share },
    refusalLog(deps.log, (l, r) => deps.metrics.connectionRefused(l, r)),
  );
  return server;
}

async function handle(deps: GatewayDeps, decide: Decider, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  // Only /verify reads a body. A subrequest that announces one it never sends (an nginx location without
  // `proxy_set_header Content-Length ""`) would have the next request's bytes taken as that body on a
  // kept-alive connection: its answer closes the connection instead.
  if (path !== '/verify' && announcesBody(req)) res.shouldKeepAlive = false;
  if (path === '/auth') return authorize(deps, decide, req, res, undefined);
  if (path === '/envoy' || path.startsWith('/envoy/')) {
    const rest = url.slice('/envoy'.length);
    return authorize(deps, decide, req, res, rest[0] === '/' ? rest : `/${rest}`);
  }
  if (path === '/answer') return render(deps, req, res);
  if (path === '/verify') {
    if (req.method !== 'POST') return sendError(req, res, 'method_not_allowed', 'The verify API takes POST.');
    const out = await verifyApi(deps, decide, req);
    if ('code' in out) return sendError(req, res, out.code, out.message, out.details);
    return sendJson(res, 200, out.body);
  }
  if (path === '/healthz') {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': 2 });
    return void res.end('ok');
  }
  sendError(req, res, 'not_found', 'No such endpoint of the decision service.');
}

/** /auth and /envoy/...: decide the described request and answer the proxy in its own terms. */
async function authorize(
  deps: GatewayDeps,
  decide: Decider,
  req: IncomingMessage,
  res: ServerResponse,
  envoyTarget: string | undefined,
): Promise<void> {
  const d = describe(req, deps.trusted, envoyTarget);
  if (!d.ok) return sendError(req, res, 'invalid_request', d.message, { field: d.field });
  const decision = await decide(d.request);
  if (decision.kind === 'allow') {
    const fields = merged(decision.upstreamFields, decision.clientFields);
    fields.push('content-length', 0);
    res.writeHead(200, fields);
    return void res.end();
  }
  if (String(req.headers['x-keygate-proxy']).toLowerCase() === 'nginx') {
    // auth_request passes on 2xx, 401 and 403 only: the answer travels signed, to /answer.
    res.writeHead(401, ['x-keygate-answer', answerToken(deps.gatewaySecret, decision), 'content-length', 0]);
    return void res.end();
  }
  writeAnswer(req, res, decision.status, decision.fields, decision.body);
}

/** /answer: the signed answer of an nginx subrequest, byte for byte; a token keygate did not sign is 400. */
function render(deps: GatewayDeps, req: IncomingMessage, res: ServerResponse): void {
  const a = readAnswerToken(deps.gatewaySecret, req.headers['x-keygate-answer']);
  if (!a) return sendError(req, res, 'invalid_request', 'X-Keygate-Answer is missing or not a valid answer token.');
  writeAnswer(req, res, a.status, a.fields, a.body);
}

/**
 * keygate's answer, as it is. The answer to a described HEAD declares the length of a body it does not
 * carry; asked by a GET (Traefik's subrequest, nginx's /answer) that declaration would frame the body
 * this message lacks, so it is left out, and the HEAD's client gets the rest.
 */
function writeAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  fields: ResponseFields,
  body: Buffer,
): void {
  let out = fields;
  if (req.method !== 'HEAD') {
    out = [];
    for (let i = 0; i < fields.length; i += 2) {
      const isLength = String(fields[i]).toLowerCase() === 'content-length';
      if (!isLength || Number(fields[i + 1]) === body.length) out.push(fields[i], fields[i + 1]);
    }
  }
  res.writeHead(status, out);
  res.end(body);
}

/** The upstream's fields then the client's, a field both carry (X-Request-Id) once. */
function merged(upstream: string[], client: ResponseFields): ResponseFields {
  const out: ResponseFields = [...upstream];
  const seen = new Set<string>();
  for (let i = 0; i < upstream.length; i += 2) seen.add(`${upstream[i].toLowerCase()}\n${upstream[i + 1]}`);
  for (let i = 0; i < client.length; i += 2) {
    if (!seen.has(`${String(client[i]).toLowerCase()}\n${client[i + 1]}`)) out.push(client[i], client[i + 1]);
  }
  return out;
}

function sendJson(res: ServerResponse, status: number, body: unknown, fields: ResponseFields = []): void {
  if (res.headersSent) return void res.destroy();
  const text = JSON.stringify(body);
  res.writeHead(status, [
    ...fields,
    'content-type',
    'application/json; charset=utf-8',
    'content-length',
    Buffer.byteLength(text),
  ]);
  res.end(text);
}

/** The service's own refusals, in the /v2 Envelope B; the request's id when it sent a valid one. */
function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  code: CodeB,
  message: string,
  details?: Record<string, unknown>,
): void {
  const requestId = requestIdOf(req.headers);
  sendJson(res, ERROR_CODES[code].status, envelopeB(code, message, requestId, details), ['x-request-id', requestId]);
}

/** A failure of the service itself: 500 without its stack; logged once, without any request field. */
function failed(deps: GatewayDeps, req: IncomingMessage, res: ServerResponse, err: unknown): void {
  // The endpoint only: a described target may carry what its client meant to keep (a token in a query).
  const endpoint = /^\/[a-z]*/.exec(req.url ?? '/')?.[0];
  deps.log.error({ err: (err as Error)?.message, endpoint }, 'decision request failed');
  sendError(req, res, 'internal_error', 'Internal error.');
}

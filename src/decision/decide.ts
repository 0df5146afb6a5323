// The decision of one request without forwarding it: the gateway's own pipeline (src/gateway/pipeline.ts,
// the API description first), run on a request another proxy describes, with its last phase
// replaced (RequestContext.admit). What the pipeline would have answered itself (a refusal, the
// rate-limit status route, the API description) is captured byte for byte as an `answer`; a request it
// would have forwarded is an `allow`, with the fields the client's answer carries (X-Request-Id, the
// rate-limit fields) and the signed identity the service is to receive. Every layer is spent exactly as
// the same request through the gateway's proxy spends it: this is that code, not a copy of it. CORS is
// applied as the gateway's listener applies it before its pipeline (serve() in src/gateway/server.ts).
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../access/principal.js';
import { requestIdOf } from '../config/contract.js';
import { UNSIGNED_BODY } from '../http/identity.js';
import type { RouteDef } from '../config/routes.js';
import type { GatewayDeps, RequestContext } from '../gateway/context.js';
import { requestInterface } from '../gateway/interfaces.js';
import type { ResponseFields } from '../gateway/fields.js';
import { addIdentityFields } from '../gateway/forward-authorized.js';
import type { Granted } from '../gateway/guards/permission.js';
import { refuse } from '../gateway/answers.js';
import { answerFailure, dispatch, recordAnswer } from '../gateway/server.js';
import { accessLogWriter, type AccessLogSource } from '../ops/logger.js';

/** A request as the proxy asking describes it. */
export interface DecisionRequest {
  method: string;
  /** The origin-form target the client sent (path and query). */
  target: string;
  /** The client's request fields, names in lower case (node:http's IncomingHttpHeaders). */
  headers: IncomingHttpHeaders;
  /** The client's address, as the caller resolved it (the proxy's X-Forwarded-For, through TRUST_PROXY). */
  ip: string;
}

export type Decision = Allow | Answer;

/** Decides a described request for one listener (the HTTP endpoints, the gRPC service). */
export type Decider = (r: DecisionRequest) => Promise<Decision>;

/** The request may go on to the service. */
export interface Allow {
  kind: 'allow';
  requestId: string;
  /** For the client's answer: X-Request-Id and the rate-limit fields, as a flat name, value list. */
  clientFields: ResponseFields;
  /** For the service's request: X-Request-Id and the signed identity (HMAC fields, JWT, as configured). */
  upstreamFields: string[];
  principal: Principal;
  grant: Granted | null;
  /** The route template matched (metrics, the access log). */
  route: string;
}

/** The proxy answers the client itself with exactly this: a refusal, or a route the gateway answers. */
export interface Answer {
  kind: 'answer';
  requestId: string;
  status: number;
  fields: ResponseFields;
  body: Buffer;
}

// The access log's writer, built once per gateway (it keeps per-writer state) when ACCESS_LOG is on.
const accessWriters = new WeakMap<GatewayDeps, ((source: AccessLogSource) => void) | null>();
function accessWriterOf(deps: GatewayDeps) {
  let w = accessWriters.get(deps);
  if (w === undefined) accessWriters.set(deps, (w = deps.accessLog ? accessLogWriter(deps.log) : null));
  return w;
}

/**
 * Decide one request. Metrics, the access log, the usage history and the console's traffic count it as
 * they count the gateway's own answers (an allowed request as a 200: the service's status is not known
 * here). A CORS preflight of the described request is answered (204) without a decision, and any other
 * answer to an allowed origin carries the same Access-Control-* fields as through the gateway. Never
 * rejects: a failure is an `answer` (503 for a store that is down, 500 otherwise).
 */
export async function decide(deps: GatewayDeps, r: DecisionRequest): Promise<Decision> {
  const writeAccess = accessWriterOf(deps);
  const rec = new RecordedResponse();
  let admitted: Omit<Allow, 'kind' | 'requestId' | 'clientFields'> | null = null;
  const ctx = contextOf(deps, r, rec, (principal, grant, route) => {
    const upstreamFields: string[] = ['x-request-id', ctx.requestId];
    // Signed without the body, which the proxy asking holds: marked so (src/verifier/digest.ts, UNSIGNED_BODY).
    if (ctx.iface.spec.identity !== 'none')
      addIdentityFields(deps, upstreamFields, ctx, principal, grant, ctx.target, UNSIGNED_BODY, deps.clock.now());
    admitted = { principal, grant, route: `${route.method} ${route.path}`, upstreamFields };
  });
  if (deps.cors.preflight(ctx.req, ctx.res)) {
    ctx.trace.route = 'preflight';
    recordAnswer(deps, ctx, writeAccess);
    return { kind: 'answer', requestId: ctx.requestId, status: rec.statusCode, fields: rec.fields, body: rec.body };
  }
  deps.cors.decorate(ctx.req, ctx.res);
  if (!ctx.served) refuse(ctx, { code: 'not_found', message: 'No such route.' });
  else {
    try {
      await dispatch(deps, ctx);
    } catch (err) {
      answerFailure(deps, ctx, err);
    }
  }
  const allowed = admitted as Omit<Allow, 'kind' | 'requestId' | 'clientFields'> | null;
  if (allowed) {
    rec.statusCode = 200;
    recordAnswer(deps, ctx, writeAccess);
    return { kind: 'allow', requestId: ctx.requestId, clientFields: [...ctx.head, ...rec.set], ...allowed };
  }
  if (!rec.ended) {
    // Neither admitted nor answered: a pipeline that returned without a word is a defect, answered 500.
    answerFailure(deps, ctx, new Error('the pipeline neither admitted nor answered the request'));
  }
  recordAnswer(deps, ctx, writeAccess);
  return { kind: 'answer', requestId: ctx.requestId, status: rec.statusCode, fields: rec.fields, body: rec.body };
}

/** The RequestContext of a described request: what the guards read, with the admission hook set. */
function contextOf(
  deps: GatewayDeps,
  r: DecisionRequest,
  res: RecordedResponse,
  admit: (principal: Principal, grant: Granted | null, route: RouteDef) => void,
): RequestContext {
  const q = r.target.indexOf('?');
  const path = q === -1 ? r.target : r.target.slice(0, q);
  const requestId = requestIdOf(r.headers);
  const { iface, served } = requestInterface(deps.profile(), path);
  // The guards read the method, the target, the fields (and the raw list for repeated Host lines);
  // the request is complete: its body, if any, is the proxy's to send on.
  const rawHeaders: string[] = [];
  for (const name in r.headers) {
    const v = r.headers[name];
    if (Array.isArray(v)) for (const one of v) rawHeaders.push(name, one);
    else if (v !== undefined) rawHeaders.push(name, v);
  }
  const req = {
    method: r.method,
    url: r.target,
    headers: r.headers,
    rawHeaders,
    complete: true,
    socket: { remoteAddress: r.ip },
  } as unknown as IncomingMessage;
  return {
    req,
    res: res as unknown as ServerResponse,
    api: iface.id,
    iface,
    served,
    requestId,
    ip: r.ip,
    method: r.method,
    path,
    target: r.target,
    started: performance.now(),
    trace: { route: 'unmatched', code: null, organizationId: null, keyId: null },
    head: ['X-Request-Id', requestId],
    span: null,
    upgrade: null,
    admit,
  };
}

/**
 * The part of ServerResponse the gateway's answers write (./answers.ts, src/gateway/cors.ts): fields set
 * ahead (CORS), one writeHead, one end. The answer's fields are the written ones, then those set ahead.
 */
class RecordedResponse {
  statusCode = 200;
  headersSent = false;
  destroyed = false;
  ended = false;
  /** Fields set with setHeader before the answer: an allowed request's client gets them too. */
  readonly set: ResponseFields = [];
  private written: ResponseFields = [];
  body: Buffer = Buffer.alloc(0);

  get fields(): ResponseFields {
    return [...this.written, ...this.set];
  }

  writeHead(status: number, fields?: ResponseFields | Record<string, string | number>): this {
    this.statusCode = status;
    this.headersSent = true;
    if (Array.isArray(fields)) this.written = [...fields];
    else if (fields) this.written = Object.entries(fields).flat();
    return this;
  }

  setHeader(name: string, value: string | number): this {
    this.set.push(name, value);
    return this;
  }

  end(chunk?: string | Buffer): this {
    this.ended = true;
    if (chunk !== undefined) this.body = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    return this;
  }

  destroy(): this {
    this.destroyed = true;
    return this;
  }
}

// The backend HTTP listener: body reading, signature verification for /v1 and /v2, routing, envelopes.
// Every error a handler throws or the database raises is turned into a response here, once, in the
// envelope of the route (docs/decisions.md sections 5 to 7).
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ApiError, envelopeA, envelopeB, isCodeOf, okA, v1Error, type CodeB, type CodeV1 } from '../http/errors.js';
import {
  IdentityVerificationError,
  verifyHmacHeaders,
  verifySignedBody,
  type SignedHmacHeaders,
} from '../verifier/index.js';
import { createReplayGuard, type ReplayGuard } from '../http/replay.js';
import { jsonOf, readBody } from '../http/body.js';
import { Router, type Ctx, type Envelope, type Reply } from './router.js';
import type { BackendServices } from './services.js';
import { registerDomains } from './domains.js';
import { requestIdOf } from '../config/contract.js';

export function envelopeFor(path: string): Envelope {
  if (path.startsWith('/v1/')) return 'v1';
  if (path.startsWith('/api-keys')) return 'A';
  return 'B';
}

export function buildRouter(svc: BackendServices): Router {
  const router = new Router(envelopeFor);
  registerDomains(router, svc);
  return router;
}

export function createBackendServer(svc: BackendServices, router = buildRouter(svc)): http.Server {
  // A signature is good once: a captured request replayed within its 60 s is refused.
  const replays = createReplayGuard();
  const server = http.createServer((req, res) => {
    handle(req, res, svc, router, replays).catch((err) => {
      // handle() set the response's request id first thing: the failure line carries it too.
      svc.log.error(
        { err: (err as Error).message, requestId: res.getHeader('x-request-id') },
        'backend request failed',
      );
      if (!res.headersSent) {
        // In the interface's own shape (a /v1 client reads error_code), never with a stack trace.
        const path = (req.url ?? '/').split('?')[0];
        const requestId = String(res.getHeader('x-request-id') ?? randomUUID());
        send(res, 500, errorBody(envelopeFor(path), new ApiError('internal_error'), requestId));
      } else res.destroy();
    });
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** The body of an error in the route's envelope; a 6-digit code is always written in Envelope A. */
function errorBody(envelope: Envelope, err: ApiError, requestId: string): unknown {
  if (isCodeOf('A', err.code)) return envelopeA(err.code, err.message);
  if (envelope === 'A')
    return {
      success: false,
      data: null,
      errorCode: null,
      errorMessage: err.message,
      error: { code: err.code, details: err.details },
    };
  if (envelope === 'v1') return v1Error(err.code as CodeV1, err.message, err.details);
  return envelopeB(err.code as CodeB, err.message, requestId, err.details);
}

/**
 * A database error a handler did not foresee, as the client's error when it is one: a unique
 * violation is a conflict; text PostgreSQL cannot hold (NUL: 22021, 22P05) or a number beyond its
 * column (22003) is bad input, so 400, not 500. Anything else stays a failure (500).
 */
function databaseError(err: unknown): ApiError | null {
  const pgCode = (err as { code?: string } | null)?.code;
  if (pgCode === '23505') return new ApiError('conflict');
  if (pgCode === '22021' || pgCode === '22P05') {
    return new ApiError('invalid_request', 'A text value cannot be stored (NUL or invalid characters).', {
      reason: 'text_not_storable',
    });
  }
  if (pgCode === '22003')
    return new ApiError('invalid_request', 'A number is out of the accepted range.', { reason: 'number_out_of_range' });
  return null;
}

const isPublicPath = (path: string) =>
  path.startsWith('/v1/') || path.startsWith('/v2/') || path === '/v1' || path === '/v2';

/**
 * The gateway's signed headers of a /v1 or /v2 request, checked by keygate/verifier as any upstream
 * would; null when the signature does not hold. The body is checked against them once it is read.
 */
function signedHeaders(req: IncomingMessage, svc: BackendServices, rawUrl: string): SignedHmacHeaders | null {
  return unlessRefused(() =>
    verifyHmacHeaders(
      svc.config.gatewaySecret,
      { method: req.method ?? 'GET', target: rawUrl, headers: req.headers },
      { now: () => svc.clock.now() },
    ),
  );
}

/** The verifier's verdict as a value: null for a refusal (answered 401), anything else thrown on. */
function unlessRefused<T>(check: () => T): T | null {
  try {
    return check();
  } catch (err) {
    if (err instanceof IdentityVerificationError) return null;
    throw err;
  }
}

/** The handler's reply written in the route's success envelope. */
function sendReply(res: ServerResponse, reply: Reply, envelope: Envelope, requestId: string, now: number): void {
  const status = reply.status ?? 200;
  const headers = reply.headers ?? {};
  if (reply.raw) {
    res.writeHead(status, { 'content-type': reply.raw.contentType, ...headers });
    res.end(reply.raw.body);
    return;
  }
  if (status === 204) {
    res.writeHead(204, headers);
    res.end();
    return;
  }
  const successEnvelope = reply.envelope ?? envelope;
  let out: unknown;
  if (successEnvelope === 'A') out = okA(reply.data ?? null);
  else if (successEnvelope === 'v1' || successEnvelope === 'raw') out = reply.data;
  else {
    out = {
      data: reply.data ?? null,
      meta: { request_id: requestId, timestamp: new Date(now).toISOString(), ...reply.meta },
      ...(reply.pagination ? { pagination: reply.pagination } : {}),
    };
  }
  send(res, status, out, headers);
}

/**
 * One request: the signature of /v1 and /v2 (docs/decisions.md section 5), routing, the body, the
 * handler, and its reply or error in the route's envelope.
 */
async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  svc: BackendServices,
  router: Router,
  replays: ReplayGuard,
) {
  const rawUrl = req.url ?? '/';
  const queryStart = rawUrl.indexOf('?');
  const path = queryStart === -1 ? rawUrl : rawUrl.slice(0, queryStart);
  const requestId = requestIdOf(req.headers);
  res.setHeader('x-request-id', requestId);
  // The envelope of every error below: the route's, or for a path no route has, the interface's.
  let envelope = envelopeFor(path);
  const fail = (err: ApiError) => send(res, err.status, errorBody(envelope, err, requestId));
  // A missing, wrong, stale or replayed signature (docs/decisions.md section 5).
  const unauthenticated = () =>
    send(res, 401, envelopeB('unauthenticated', 'Missing, invalid or expired gateway signature.', requestId));

  const signed = isPublicPath(path) ? signedHeaders(req, svc, rawUrl) : null;
  if (isPublicPath(path) && !signed) return unauthenticated();

  const found = router.resolve(req.method ?? 'GET', path);
  if (found.kind === 'not_found') return fail(new ApiError('not_found', 'No such route.'));
  // A known path with another method: 405 where the envelope has it; /v1 has no such code (not_found).
  if (found.kind === 'method_not_allowed')
    return fail(
      new ApiError(envelope === 'v1' ? 'not_found' : 'method_not_allowed', 'Method not allowed on this route.'),
    );
  const match = { ...found.route, params: found.params };
  envelope = match.envelope;

  const bodyless = req.method === 'GET' || req.method === 'HEAD';
  const buf = bodyless ? Buffer.alloc(0) : await readBody(req, svc.config.bodyLimitBytes);
  if (buf === 'too_large') return fail(new ApiError('payload_too_large'));
  // The signature covers the body through its Content-Digest (RFC 9530), and is good once.
  const identity =
    signed && unlessRefused(() => verifySignedBody(signed, buf, { acceptUnsignedBody: svc.config.acceptUnsignedBody }));
  if (signed && (!identity || !replays.firstUse(signed.signature, svc.clock.now()))) return unauthenticated();
  const parsed = jsonOf(buf);
  if (!parsed) return fail(new ApiError('invalid_request', 'Request body is not valid JSON.'));

  const log = svc.log.child({ requestId });
  const ctx: Ctx = {
    req,
    method: req.method ?? 'GET',
    path,
    query: new URLSearchParams(queryStart === -1 ? '' : rawUrl.slice(queryStart + 1)),
    params: match.params,
    identity,
    requestId,
    log,
    body: parsed.value,
    db: svc.db,
    // Handlers log through ctx.svc.log and hand ctx.svc down: this request's view carries the request id.
    svc: { ...svc, log },
  };
  let reply: Reply;
  try {
    reply = await match.handler(ctx);
  } catch (err) {
    if (err instanceof ApiError) return fail(err);
    const clientError = databaseError(err);
    if (!clientError) throw err;
    // The validators (src/db/storable.ts) should have refused bad input first, naming the field: the
    // warning says one did not.
    if (clientError.code === 'invalid_request') {
      log.warn(
        { pgCode: (err as { code: string }).code, route: match.pattern },
        'input reached the database unvalidated',
      );
    }
    return fail(clientError);
  }
  sendReply(res, reply, envelope, requestId, svc.clock.now());
}

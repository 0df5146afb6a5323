// Every answer the gateway writes itself: refusals in the interface's envelope (its profile's `errors`:
// the workspace API's Envelope A for the 6-digit codes of /v2 and Envelope B for the rest of /v2, the v1
// shape on /v1, or RFC 9457 problem details) and the routes it answers on its own. The rate-limit fields
// are in ctx.head already, from the states the caller read or spent.
import type { RequestContext } from './context.js';
import { AccessStoreUnavailableError } from '../access/cache.js';
import { StoreUnavailableError } from '../limits/resilient/index.js';
import {
  ERROR_CODES,
  ENVELOPE_A,
  ENVELOPE_B,
  V1_ERRORS,
  envelopeA,
  envelopeB,
  v1Error,
  type CodeA,
  type CodeB,
  type CodeV1,
} from '../http/errors.js';
import { announcesBody } from './body-read.js';
import type { GatewayCode, Refusal } from './refusal.js';
import { refusalName, type RefusalName } from '../config/profile/refusals.js';
import type { ProblemAnswer } from '../config/profile/types.js';

/** The /v1 error code for a /v2 one (docs/decisions.md section 4). */
const V1_CODE: Partial<Record<GatewayCode, CodeV1>> = {
  '150001': 'unauthorized',
  '150002': 'unauthorized',
  '150006': 'too_many_failed_attempts',
  '150007': 'api_access_disabled',
  '040006': 'subscription_paused',
  '150005': 'rate_limit_exceeded',
  access_store_unavailable: 'service_unavailable',
};

const isCodeA = (code: GatewayCode): code is CodeA => code in ENVELOPE_A;

export function sendJson(
  ctx: RequestContext,
  status: number,
  body: unknown,
  headers?: Record<string, string | number>,
  contentType = 'application/json; charset=utf-8',
): void {
  const { res } = ctx;
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  const fields = ctx.head;
  if (headers) for (const name in headers) fields.push(name, headers[name]);
  // A body the gateway did not read stays unread: the connection cannot be reused after it.
  if (!ctx.req.complete && announcesBody(ctx.req)) fields.push('connection', 'close');
  fields.push('content-type', contentType, 'content-length', Buffer.byteLength(text));
  res.writeHead(status, fields);
  res.end(ctx.method === 'HEAD' ? undefined : text);
}

/**
 * A store the gateway cannot do without is down (the limiter's breaker open in closed failure mode, the
 * access store unreachable): 503 with Retry-After, never a 401 or 403 that would blame the key.
 */
export function unavailableRefusal(err: unknown): Refusal | null {
  if (err instanceof StoreUnavailableError)
    return {
      code: 'rate_limiter_unavailable',
      message: 'The rate limiter is unavailable; retry shortly.',
      retryAfter: 2,
    };
  if (err instanceof AccessStoreUnavailableError)
    return {
      code: 'access_store_unavailable',
      message: 'The access store is unavailable; retry shortly.',
      retryAfter: 2,
    };
  return null;
}

/** Answer a refusal in the envelope of the request's interface. */
export function refuse(ctx: RequestContext, refusal: Refusal): void {
  const headers = refusal.retryAfter !== undefined ? { 'Retry-After': refusal.retryAfter } : undefined;
  if (refusal.layer) ctx.trace.limit = refusal.layer;
  const { errors } = ctx.iface.spec;
  if (errors.format === 'problem') return problem(ctx, errors.problems, refusal, headers);
  if (errors.format === 'v1') {
    const code = V1_CODE[refusal.code] ?? (refusal.code as CodeV1);
    ctx.trace.code = code;
    return sendJson(
      ctx,
      V1_ERRORS[code] ?? 500,
      v1Error(code, refusal.message ?? ERROR_CODES[code]?.message ?? code, refusal.details),
      headers,
    );
  }
  ctx.trace.code = refusal.code;
  if (isCodeA(refusal.code))
    return sendJson(ctx, ENVELOPE_A[refusal.code].status, envelopeA(refusal.code, refusal.message), headers);
  const code = refusal.code as CodeB;
  sendJson(
    ctx,
    ENVELOPE_B[code],
    envelopeB(code, refusal.message ?? code, ctx.requestId, refusal.details, refusal.retryAfter),
    headers,
  );
}

/**
 * A refusal as RFC 9457 problem details: the profile's type, title and status for its name
 * (src/config/profile/refusals.ts), what happened in `detail`, and the members a client needs besides
 * (`code`, `request_id`, `retry_after`, the refusal's details).
 */
function problem(
  ctx: RequestContext,
  problems: Record<RefusalName, ProblemAnswer>,
  refusal: Refusal,
  headers: Record<string, string | number> | undefined,
): void {
  const p = problems[refusalName(refusal.code, refusal.layer)];
  ctx.trace.code = p.code;
  const body: Record<string, unknown> = {
    type: p.type,
    title: p.title,
    status: p.status,
    detail: refusal.message ?? p.title,
    code: p.code,
    request_id: ctx.requestId,
  };
  if (refusal.retryAfter !== undefined) body.retry_after = refusal.retryAfter;
  if (refusal.details) body.details = refusal.details;
  sendJson(ctx, p.status, body, headers, 'application/problem+json');
}

// The one table of error codes of both interfaces: for each code its HTTP status, its default message
// and the envelope(s) it is written in. Handlers throw `new ApiError(code, message?, details?)`; the
// status and the shape come from here and from the route's envelope, never written by hand (STYLE
// habit 1). test/http/error-table.test.ts keeps this table equal to the codes the documents list.

/**
 * `A`: the 6-digit codes of /v2 (`errorCode`); `B`: the snake_case codes of /v2 (`error.code`);
 * `v1`: the /v1 `error_code` values.
 */
export type ErrorEnvelope = 'A' | 'B' | 'v1';

interface ErrorSpec {
  status: number;
  message: string;
  envelopes: readonly ErrorEnvelope[];
  /** Not listed by the specification or CONTRACT.md: keygate's own code; the comment above says why. */
  own?: true;
}

export const ERROR_CODES = {
  // Envelope A: v2 spec, Errors; CONTRACT.md sections 3 and 7.
  '150001': { status: 401, envelopes: ['A'], message: 'Missing bearer token: send Authorization: Bearer <API key>.' },
  '150002': { status: 401, envelopes: ['A'], message: 'Invalid or revoked API key.' },
  '150003': { status: 403, envelopes: ['A'], message: 'The API key lacks the scope this route requires, or its role caps it.' },
  '150004': { status: 403, envelopes: ['A'], message: 'The API key is not authorized for this workspace.' },
  '150005': { status: 429, envelopes: ['A'], message: 'Rate limit exceeded.' },
  '150006': { status: 429, envelopes: ['A'], message: 'Too many failed authentication attempts from this address; try again later.' },
  '150007': { status: 403, envelopes: ['A'], message: 'The plan has no API access; the key works again after an upgrade.' },
  '040006': { status: 403, envelopes: ['A'], message: 'Subscription paused: the organization is read-only.' },
  '150101': { status: 400, envelopes: ['A'], message: 'A workspace id is required to create a workspace key.' },
  '150102': { status: 403, envelopes: ['A'], message: 'Cannot create a key with a role above the creator\'s.' },
  '150103': { status: 403, envelopes: ['A'], message: 'No access to the workspace for this key.' },
  '150104': { status: 404, envelopes: ['A'], message: 'No key with that id in the organization.' },

  // Envelope B (v2 spec, Errors, and CONTRACT.md sections 3 and 5) and /v1 (v1 spec, Errors, and
  // CONTRACT.md section 4). The gateway writes a /v2 refusal on /v1 under the same name when the v1
  // table has it, so the generic codes are in both.
  invalid_request: { status: 400, envelopes: ['B', 'v1'], message: 'The request is invalid.' },
  unauthenticated: { status: 401, envelopes: ['B'], message: 'Missing, invalid or expired gateway signature.' },
  unauthorized: { status: 401, envelopes: ['v1'], message: 'Invalid or revoked API key.' },
  forbidden: { status: 403, envelopes: ['B', 'v1'], message: 'Not allowed.' },
  api_access_disabled: { status: 403, envelopes: ['v1'], message: 'The plan has no API access.' },
  subscription_paused: { status: 403, envelopes: ['v1'], message: 'Subscription paused: the organization is read-only.' },
  partner_not_configured: { status: 403, envelopes: ['B'], message: 'The organization has no verified partner callback.' },
  // The v2 spec names four codes "not shown" for the capacity conditions: this is keygate's name for
  // the plan's warming-mailbox cap.
  warming_capacity_reached: { status: 403, envelopes: ['B'], message: 'The plan\'s warming-mailbox cap is reached.', own: true },
  // The v1 table is "not shown" beyond its examples: a plan entitlement a /v1 setting needs.
  entitlement_required: { status: 403, envelopes: ['v1'], message: 'This setting needs an entitlement of a higher plan.', own: true },
  not_found: { status: 404, envelopes: ['B', 'v1'], message: 'No such resource.' },
  // A known path with another method: 405 on /v2, not 404 (the route exists), a plain not_found on /v1.
  method_not_allowed: { status: 405, envelopes: ['B'], message: 'Method not allowed on this route.', own: true },
  // The gateway's slow-client guard: the body did not arrive in time.
  request_timeout: { status: 408, envelopes: ['B', 'v1'], message: 'The request body did not arrive in time.', own: true },
  conflict: { status: 409, envelopes: ['B', 'v1'], message: 'Conflicts with an existing resource.' },
  mailbox_verification_pending: { status: 409, envelopes: ['B'], message: 'The mailbox check is still running.' },
  mailbox_verification_failed: { status: 400, envelopes: ['B'], message: 'The mailbox failed the send-and-receive check.' },
  quota_exceeds_org_limit: { status: 400, envelopes: ['B'], message: 'The budgets would exceed the organization\'s cap.' },
  // A request target longer than REQUEST_TARGET_MAX_BYTES: refused before any step, so the head the
  // gateway forwards (target, identity, client fields) stays within the upstream's header limit.
  uri_too_long: { status: 414, envelopes: ['B', 'v1'], message: 'The request target is too long.', own: true },
  payload_too_large: { status: 413, envelopes: ['B', 'v1'], message: 'Request body too large.' },
  email_mismatch: { status: 422, envelopes: ['B'], message: 'The access token belongs to a different mailbox than emailAddress.' },
  unprocessable_entity: { status: 422, envelopes: ['B', 'v1'], message: 'The request cannot be processed.' },
  rate_limit_exceeded: { status: 429, envelopes: ['v1'], message: 'Rate limit exceeded.' },
  too_many_failed_attempts: { status: 429, envelopes: ['v1'], message: 'Too many failed authentication attempts from this address; try again later.' },
  // Every unforeseen failure, in the interface's own shape rather than a stack trace.
  internal_error: { status: 500, envelopes: ['B', 'v1'], message: 'Internal error.', own: true },
  not_implemented: { status: 501, envelopes: ['v1'], message: 'Not implemented.' },
  bad_gateway: { status: 502, envelopes: ['B', 'v1'], message: 'The upstream could not be reached.' },
  // Dependencies down: the rate limiter in closed failure mode (CONTRACT.md section 1,
  // RATE_LIMIT_FAILURE_MODE), the access store, or a service the backend relies on (DNS, database).
  rate_limiter_unavailable: { status: 503, envelopes: ['B', 'v1'], message: 'The rate limiter is unavailable.', own: true },
  access_store_unavailable: { status: 503, envelopes: ['B'], message: 'The access store is unavailable.', own: true },
  service_unavailable: { status: 503, envelopes: ['B', 'v1'], message: 'Service unavailable; try again later.', own: true },
  gateway_timeout: { status: 504, envelopes: ['B', 'v1'], message: 'The upstream did not answer in time.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

type CodesOf<E extends ErrorEnvelope> = {
  [C in ErrorCode]: E extends (typeof ERROR_CODES)[C]['envelopes'][number] ? C : never;
}[ErrorCode];
export type CodeA = CodesOf<'A'>;
export type CodeB = CodesOf<'B'>;
export type CodeV1 = CodesOf<'v1'>;

function codesOf<E extends ErrorEnvelope>(envelope: E): CodesOf<E>[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) =>
    (ERROR_CODES[code].envelopes as readonly ErrorEnvelope[]).includes(envelope)) as CodesOf<E>[];
}

export function isCodeOf<E extends ErrorEnvelope>(envelope: E, code: string): code is CodesOf<E> {
  return Object.hasOwn(ERROR_CODES, code) && (ERROR_CODES[code as ErrorCode].envelopes as readonly ErrorEnvelope[]).includes(envelope);
}

// Views of the table by envelope, for the gateway's refusals.
export const ENVELOPE_A = Object.fromEntries(
  codesOf('A').map((code) => [code, { status: ERROR_CODES[code].status, message: ERROR_CODES[code].message }]),
) as { readonly [C in CodeA]: { readonly status: number; readonly message: string } };
export const ENVELOPE_B = Object.fromEntries(codesOf('B').map((code) => [code, ERROR_CODES[code].status])) as { readonly [C in CodeB]: number };
export const V1_ERRORS = Object.fromEntries(codesOf('v1').map((code) => [code, ERROR_CODES[code].status])) as { readonly [C in CodeV1]: number };

export function envelopeA(code: CodeA, message?: string) {
  return { success: false, data: null, errorCode: code, errorMessage: message ?? ERROR_CODES[code].message };
}

export function okA(data: unknown) {
  return { success: true, data, errorCode: null, errorMessage: null };
}

export function envelopeB(code: CodeB, message: string, requestId: string, details: Record<string, unknown> = {}, retryAfter?: number) {
  const error: Record<string, unknown> = { code, message, details };
  if (retryAfter !== undefined) error.retry_after = retryAfter;
  return { error, meta: { request_id: requestId, timestamp: new Date().toISOString() } };
}

export function v1Error(code: CodeV1, message: string, details: Record<string, unknown> = {}) {
  return { error_code: code, message, details };
}

/**
 * Thrown by handlers, whatever their interface: the backend writes it in the envelope of the route
 * that threw it (src/backend/server.ts), with the status of its code.
 */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message ?? ERROR_CODES[code].message);
  }
  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

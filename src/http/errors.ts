// The error tables of both /v2 envelopes and of /v1. Handlers name a code; the status and the shape
// come from here, never written by hand (STYLE habit 1).

/** Envelope A: 6-digit codes (spec, Errors). */
export const ENVELOPE_A = {
  '150001': { status: 401, message: 'Missing bearer token: send Authorization: Bearer <API key>.' },
  '150002': { status: 401, message: 'Invalid or revoked API key.' },
  '150003': { status: 403, message: 'The API key lacks the scope this route requires, or its role caps it.' },
  '150004': { status: 403, message: 'The API key is not authorized for this workspace.' },
  '150005': { status: 429, message: 'Rate limit exceeded.' },
  '150006': { status: 429, message: 'Too many failed authentication attempts from this address; try again later.' },
  '150007': { status: 403, message: 'The plan has no API access; the key works again after an upgrade.' },
  '040006': { status: 403, message: 'Subscription paused: the organization is read-only.' },
  '150101': { status: 400, message: 'A workspace id is required to create a workspace key.' },
  '150102': { status: 403, message: 'Cannot create a key with a role above the creator\'s.' },
  '150103': { status: 403, message: 'No access to the workspace for this key.' },
  '150104': { status: 404, message: 'No key with that id in the organization.' },
} as const;
export type CodeA = keyof typeof ENVELOPE_A;

/** Envelope B: snake_case codes. */
export const ENVELOPE_B = {
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable_entity: 422,
  rate_limited: 429,
  internal_error: 500,
  not_implemented: 501,
  bad_gateway: 502,
  rate_limiter_unavailable: 503,
  access_store_unavailable: 503,
  service_unavailable: 503,
  gateway_timeout: 504,
  mailbox_verification_pending: 409,
  mailbox_verification_failed: 400,
  partner_not_configured: 403,
  email_mismatch: 422,
  quota_exceeds_org_limit: 400,
  warming_capacity_reached: 403,
} as const;
export type CodeB = keyof typeof ENVELOPE_B;

/** /v1 error_code values. */
export const V1_ERRORS = {
  invalid_request: 400,
  unauthorized: 401,
  api_access_disabled: 403,
  subscription_paused: 403,
  forbidden: 403,
  entitlement_required: 403,
  not_found: 404,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  unprocessable_entity: 422,
  rate_limit_exceeded: 429,
  too_many_failed_attempts: 429,
  internal_error: 500,
  not_implemented: 501,
  bad_gateway: 502,
  rate_limiter_unavailable: 503,
  service_unavailable: 503,
  gateway_timeout: 504,
} as const;
export type CodeV1 = keyof typeof V1_ERRORS;

export function envelopeA(code: CodeA, message?: string) {
  return { success: false, data: null, errorCode: code, errorMessage: message ?? ENVELOPE_A[code].message };
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

/** Thrown by handlers; the router turns it into the interface's error body. */
export class ApiError extends Error {
  constructor(
    readonly code: CodeB,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
  get status(): number {
    return ENVELOPE_B[this.code];
  }
}

/** Thrown by handlers that answer in Envelope A (the /api-keys routes, the tag list). */
export class ApiErrorA extends Error {
  constructor(
    readonly code: CodeA,
    message?: string,
  ) {
    super(message ?? ENVELOPE_A[code].message);
  }
  get status(): number {
    return ENVELOPE_A[this.code].status;
  }
}

/** Thrown by /v1 handlers. */
export class V1Error extends Error {
  constructor(
    readonly code: CodeV1,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
  get status(): number {
    return V1_ERRORS[this.code];
  }
}

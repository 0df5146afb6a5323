// The admin API's one error shape and its codes, each with its HTTP status (one typed table: a handler
// throws a code, never writes a status and a message by hand).
//   { "error": { "code": "unauthorized", "message": "...", "requestId": "..." } }
import { CodedError } from '../http/errors.js';

export const ADMIN_ERRORS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  too_many_attempts: 429,
  internal: 500,
  service_unavailable: 503,
} as const;

export type AdminErrorCode = keyof typeof ADMIN_ERRORS;

export class AdminApiError extends CodedError<AdminErrorCode> {
  constructor(code: AdminErrorCode, message: string, retryAfter?: number) {
    super(code, message, {}, retryAfter);
  }
  get status(): number {
    return ADMIN_ERRORS[this.code];
  }
}

export function errorBody(code: AdminErrorCode, message: string, requestId: string) {
  return { error: { code, message, requestId } };
}

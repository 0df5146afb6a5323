// The refusals a profile's answers name: every answer the gateway writes itself, in words any API can
// use. The pipeline decides with the workspace API's codes (src/gateway/refusal.ts, GatewayCode); a problem-details
// profile answers each under the name below, with the status, code and title its file gives or, where it
// gives none, these defaults (docs/profiles.md, `errors.refusals`).
import type { CodeA, CodeB } from '../../http/errors.js';

type GatewayCode = CodeA | CodeB;

export const REFUSAL_DEFAULTS = {
  missing_key: { status: 401, title: 'An API key is required.' },
  invalid_key: { status: 401, title: 'The API key is invalid, expired or revoked.' },
  too_many_failures: { status: 429, title: 'Too many failed authentication attempts from this address.' },
  access_disabled: { status: 403, title: "The consumer's plan has no API access." },
  subscription_paused: { status: 403, title: "The consumer's subscription is paused." },
  insufficient_scope: { status: 403, title: "The API key does not hold the route's scope." },
  not_found: { status: 404, title: 'No such route.' },
  rate_limited: { status: 429, title: 'Rate limit exceeded.' },
  quota_exhausted: { status: 429, title: 'Monthly request quota exhausted.' },
  invalid_request: { status: 400, title: 'The request is invalid.' },
  payload_too_large: { status: 413, title: 'The request body is too large.' },
  uri_too_long: { status: 414, title: 'The request target is too long.' },
  request_timeout: { status: 408, title: 'The request body did not arrive in time.' },
  bad_gateway: { status: 502, title: 'The upstream could not be reached.' },
  gateway_timeout: { status: 504, title: 'The upstream did not answer in time.' },
  service_unavailable: { status: 503, title: 'The service is unavailable; retry shortly.' },
  limiter_unavailable: { status: 503, title: 'The rate limiter is unavailable; retry shortly.' },
  access_store_unavailable: { status: 503, title: 'The access store is unavailable; retry shortly.' },
  internal_error: { status: 500, title: 'Internal error.' },
} as const satisfies Record<string, { status: number; title: string }>;

export type RefusalName = keyof typeof REFUSAL_DEFAULTS;
export const REFUSAL_NAMES = Object.keys(REFUSAL_DEFAULTS) as RefusalName[];

/** The default code of a refusal: its name with dashes (`insufficient-scope`). */
export const defaultCode = (name: RefusalName): string => name.replace(/_/g, '-');

// The pipeline's codes, by meaning. 150004 (a workspace not the key's) cannot happen without workspaces,
// and is answered as a missing scope should a consumer profile ever produce it.
const BY_CODE: Partial<Record<GatewayCode, RefusalName>> = {
  '150001': 'missing_key',
  '150002': 'invalid_key',
  '150003': 'insufficient_scope',
  '150004': 'insufficient_scope',
  '150005': 'rate_limited',
  '150006': 'too_many_failures',
  '150007': 'access_disabled',
  '040006': 'subscription_paused',
  invalid_request: 'invalid_request',
  not_found: 'not_found',
  method_not_allowed: 'not_found',
  payload_too_large: 'payload_too_large',
  uri_too_long: 'uri_too_long',
  request_timeout: 'request_timeout',
  bad_gateway: 'bad_gateway',
  gateway_timeout: 'gateway_timeout',
  service_unavailable: 'service_unavailable',
  rate_limiter_unavailable: 'limiter_unavailable',
  access_store_unavailable: 'access_store_unavailable',
  internal_error: 'internal_error',
};

/** The name a refusal is answered under; a limit's refusal of the month layer is `quota_exhausted`. */
export function refusalName(code: GatewayCode, layer?: 'key' | 'address' | 'month'): RefusalName {
  if (code === '150005' && layer === 'month') return 'quota_exhausted';
  return BY_CODE[code] ?? 'internal_error';
}

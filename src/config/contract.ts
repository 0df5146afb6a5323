// The numbers and patterns the interfaces and docs/decisions.md fix, in one place: the gateway, the
// backend, the admin API, the OpenAPI generators and the CLI import them from here, so that a rule
// changes in one line and the description of an API cannot drift from what its code checks.
// Patterns come as `*_SOURCE` strings too, for JSON Schema `pattern` fields and route syntaxes.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The largest value of a PostgreSQL `integer` column: every id of the data model. */
export const PG_INT_MAX = 2_147_483_647;

/**
 * A canonical id path segment (docs/decisions.md section 3, step 1): decimal, no leading zero, at most
 * 16 digits. A segment starting with a digit, `-` or `+` must match it.
 */
export const CANONICAL_ID_SOURCE = '^[1-9][0-9]{0,15}$';
export const CANONICAL_ID = new RegExp(CANONICAL_ID_SOURCE);

/** A `{name:str}` path parameter: a short token (config/routes.json, /v1 string ids). */
export const STRING_ID_SOURCE = '^[A-Za-z0-9_-]{1,64}$';
export const STRING_ID = new RegExp(STRING_ID_SOURCE);

/** A database id as text (paths of the admin API and /api-keys, CLI arguments): at most 10 digits... */
export const DB_ID_SOURCE = '^[1-9][0-9]{0,9}$';
export const DB_ID = new RegExp(DB_ID_SOURCE);
/** ...and within PG_INT_MAX, so that `abc`, `1.5`, `1e3` or `9999999999` never reach a query. */
export const isDbId = (raw: string): boolean => DB_ID.test(raw) && Number(raw) <= PG_INT_MAX;

/** An X-Request-Id the gateway and the backend keep from the client; any other is replaced. */
export const REQUEST_ID_SOURCE = '^[A-Za-z0-9._-]{1,128}$';
export const REQUEST_ID = new RegExp(REQUEST_ID_SOURCE);

/** The request's own X-Request-Id when it is well-formed, else a new one. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const sent = headers['x-request-id'];
  return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
}

/** A key secret: its type's prefix, then 32 to 128 characters of [A-Za-z0-9] (docs/decisions.md section 2). */
export const KEY_SECRET = /^(svc_ws_|svc_pk_|svc_v1_)[A-Za-z0-9]{32,128}$/;

/** Every rate-limit window: a fixed wall-clock minute (docs/decisions.md section 3, "Windows and headers"). */
export const WINDOW_SECONDS = 60;

/** The address layer of /v2: requests per window per client address, across keys and buckets (section 3). */
export const IP_LIMIT = 100;
/** The one layer of /v1: requests per window per partner key (section 4). */
export const V1_LIMIT = 20;

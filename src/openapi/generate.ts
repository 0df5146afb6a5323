// The API description of /v2 and /v1 (OpenAPI 3.1), generated from the same sources the code runs on:
// config/routes.json (every route, its scope, minimum role and bucket), the backend's zod schemas
// (src/backend/schemas.ts: what the handlers parse) and the error tables (src/http/errors.ts). The
// documents in config/openapi/ are this function's output; a test keeps them equal to a fresh run.
import { z } from 'zod';
import { routesFileSchema, type RoutesFile } from '../config/routes.js';
import { ENVELOPE_A, ENVELOPE_B, V1_ERRORS } from '../http/errors.js';
import { SCHEMAS, type OperationSchemas } from '../backend/schemas.js';
import { CANONICAL_ID_SOURCE, IP_LIMIT, REQUEST_ID_SOURCE, STRING_ID_SOURCE, V1_LIMIT } from '../config/contract.js';

export type Api = 'v1' | 'v2';
type Json = Record<string, unknown>;

/** The 6-digit codes the gateway answers on /v2 (docs/decisions.md section 3); 1501xx belong to /api-keys. */
const GATEWAY_CODES_A = ['150001', '150002', '150003', '150004', '150005', '150006', '150007', '040006'] as const;

/** A canonical id segment (docs/decisions.md section 3) and a string id of /v1 (src/config/routes.ts). */
export const ID_PARAM = {
  type: 'string',
  pattern: CANONICAL_ID_SOURCE,
  description: 'A positive decimal id without leading zeros.',
};
export const STRING_PARAM = { type: 'string', pattern: STRING_ID_SOURCE };

const REF = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** A zod schema as JSON Schema 2020-12, without its `$schema` line (OpenAPI 3.1 declares the dialect). */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}

const int = { type: 'integer' };
const header = (description: string, schema: Json = int) => ({ description, schema });

/** The rate-limit fields (docs/decisions.md sections 3 and 4; docs/workspace-api.md, "How a request is decided"). */
function headers(api: Api): Record<string, Json> {
  const h: Record<string, Json> = {
    'X-Request-Id': header(
      `The request id (kept from the client when it matches ${REQUEST_ID_SOURCE}); Envelope B meta.request_id equals it.`,
      { type: 'string' },
    ),
    'X-RateLimit-Limit': header(
      api === 'v2'
        ? "The limit of this request's bucket (the key's layer)."
        : `Requests allowed per window per key (${V1_LIMIT}).`,
    ),
    'X-RateLimit-Remaining': header('Requests left in that bucket this window.'),
    'X-RateLimit-Reset': header(
      'Unix time in seconds when the window resets (fixed 60-second windows on the wall-clock minute).',
    ),
    'RateLimit-Policy': header(
      `The policies of draft-ietf-httpapi-ratelimit-headers, one per layer: ${api === 'v2' ? '"read", "write" or "bulk" (the key\'s bucket; its limit is the key\'s or organization\'s override when one is set, else the plan\'s) and "ip"' : '"partner"'}; q is the limit, w the window in seconds. An organization with a monthly quota gets a third policy, "month" (q the quota, w the seconds of the calendar month, UTC).`,
      { type: 'string' },
    ),
    RateLimit: header(
      "The draft's remaining (r) and seconds until reset (t) of each policy; t = X-RateLimit-Reset - now.",
      { type: 'string' },
    ),
    'Retry-After': header('On 429: seconds to wait, at least 1.', { type: 'integer', minimum: 1 }),
  };
  if (api === 'v2') {
    h['X-RateLimit-IP-Limit'] = header(`The per-address ceiling (${IP_LIMIT} per minute).`);
    h['X-RateLimit-IP-Remaining'] = header('Requests left for the client address this window.');
  }
  return h;
}

/** The headers of every answer; Retry-After on 429 only, the key's fields once a key is resolved. */
function responseHeaders(api: Api, status: number): Record<string, Json> {
  const names = [
    'X-Request-Id',
    'X-RateLimit-Limit',
    'X-RateLimit-Remaining',
    'X-RateLimit-Reset',
    'RateLimit-Policy',
    'RateLimit',
  ];
  if (api === 'v2') names.push('X-RateLimit-IP-Limit', 'X-RateLimit-IP-Remaining');
  if (status === 429) names.push('Retry-After');
  return Object.fromEntries(names.map((n) => [n, REF('headers', n)]));
}

function envelopeSchemas(api: Api): Record<string, Json> {
  return api === 'v1' ? v1EnvelopeSchemas() : v2EnvelopeSchemas();
}

/** The /v1 error body and what GET /v1/rate-limit reports. */
function v1EnvelopeSchemas(): Record<string, Json> {
  return {
    V1Error: {
      type: 'object',
      description: 'The /v1 error body (v1 spec, Errors).',
      properties: {
        error_code: { type: 'string', enum: Object.keys(V1_ERRORS) },
        message: { type: 'string' },
        details: { type: 'object' },
      },
      required: ['error_code', 'message', 'details'],
    },
    RateLimitStatus: {
      type: 'object',
      properties: {
        limit: int,
        used: int,
        remaining: int,
        reset: int,
        windowSeconds: int,
        month: {
          type: 'object',
          description:
            "The organization's monthly request quota (calendar month, UTC), when it has one; reset is the month's end.",
          properties: { limit: int, used: int, remaining: int, reset: int },
          required: ['limit', 'used', 'remaining', 'reset'],
        },
      },
      required: ['limit', 'used', 'remaining', 'reset', 'windowSeconds'],
    },
  };
}

/** What GET {wid}/rate-limit reports for the calling key: each bucket, the address layer and the month. */
function v2RateLimitStatus(): Json {
  const layer = {
    type: 'object',
    properties: { limit: int, used: int, remaining: int, reset: int },
    required: ['limit', 'used', 'remaining', 'reset'],
  };
  // A bucket whose budget is overridden says where from; absent, the plan's.
  const bucketLayer = {
    ...layer,
    properties: { ...layer.properties, source: { type: 'string', enum: ['key', 'organization'] } },
  };
  return {
    type: 'object',
    description: 'What GET {wid}/rate-limit reports for the calling key, read without spending.',
    properties: {
      plan: { type: 'string' },
      windowSeconds: int,
      buckets: {
        type: 'object',
        properties: { read: bucketLayer, write: bucketLayer, bulk: bucketLayer },
        required: ['read', 'write', 'bulk'],
      },
      ip: layer,
      month: {
        ...layer,
        description:
          "The organization's monthly request quota (calendar month, UTC), when it has one; reset is the month's end.",
      },
    },
    required: ['plan', 'windowSeconds', 'buckets', 'ip'],
  };
}

/** The /v2 envelopes (A and B) on error, their meta and pagination, and the rate-limit status. */
function v2EnvelopeSchemas(): Record<string, Json> {
  return {
    Meta: {
      type: 'object',
      properties: { request_id: { type: 'string' }, timestamp: { type: 'string', format: 'date-time' } },
      required: ['request_id', 'timestamp'],
    },
    Pagination: {
      type: 'object',
      properties: { page: int, per_page: int, total: int, total_pages: int, has_more: { type: 'boolean' } },
      required: ['page', 'per_page', 'total', 'total_pages', 'has_more'],
    },
    EnvelopeAError: {
      type: 'object',
      description: 'Envelope A on error: authentication, authorization, rate-limit and paused-subscription refusals.',
      properties: {
        success: { const: false },
        data: { type: 'null' },
        errorCode: { type: 'string', enum: [...GATEWAY_CODES_A] },
        errorMessage: { type: 'string' },
      },
      required: ['success', 'data', 'errorCode', 'errorMessage'],
    },
    EnvelopeBError: {
      type: 'object',
      description: 'Envelope B on error.',
      properties: {
        error: {
          type: 'object',
          properties: {
            code: { type: 'string', enum: Object.keys(ENVELOPE_B) },
            message: { type: 'string' },
            details: { type: 'object' },
            retry_after: { type: 'number' },
          },
          required: ['code', 'message', 'details'],
        },
        meta: REF('schemas', 'Meta'),
      },
      required: ['error', 'meta'],
    },
    RateLimitStatus: v2RateLimitStatus(),
  };
}

/** One response per error status, naming every code answered with it. */
function errorResponses(api: Api): Record<string, Json> {
  const byStatus = new Map<number, { a: string[]; b: string[] }>();
  const at = (s: number) => byStatus.get(s) ?? byStatus.set(s, { a: [], b: [] }).get(s)!;
  if (api === 'v2') {
    for (const c of GATEWAY_CODES_A) at(ENVELOPE_A[c].status).a.push(c);
    for (const [c, s] of Object.entries(ENVELOPE_B)) at(s).b.push(c);
  } else {
    for (const [c, s] of Object.entries(V1_ERRORS)) at(s).b.push(c);
  }
  const out: Record<string, Json> = {};
  for (const [status, { a, b }] of [...byStatus].sort((x, y) => x[0] - y[0])) {
    const variants: Json[] = [];
    if (a.length)
      variants.push({ allOf: [REF('schemas', 'EnvelopeAError'), { properties: { errorCode: { enum: a } } }] });
    if (b.length) {
      variants.push(
        api === 'v2'
          ? {
              allOf: [
                REF('schemas', 'EnvelopeBError'),
                { properties: { error: { properties: { code: { enum: b } } } } },
              ],
            }
          : { allOf: [REF('schemas', 'V1Error'), { properties: { error_code: { enum: b } } }] },
      );
    }
    out[`Error${status}`] = {
      description: [...a, ...b].join(', '),
      headers: responseHeaders(api, status),
      content: { 'application/json': { schema: variants.length === 1 ? variants[0] : { oneOf: variants } } },
    };
  }
  return out;
}

function successResponse(api: Api, ops: OperationSchemas, status: number): Json {
  // Without a response schema: any JSON (an object or an array), not described in detail.
  const data = ops.response ? jsonSchema(ops.response, 'output') : { description: 'Not described in detail.' };
  const headers = responseHeaders(api, status);
  if (ops.envelope === 'csv')
    return { description: 'CSV', headers, content: { 'text/csv': { schema: { type: 'string' } } } };
  let schema: Json;
  if (api === 'v1') schema = data;
  else if (ops.envelope === 'A') {
    schema = {
      type: 'object',
      description: 'Envelope A on success.',
      properties: { success: { const: true }, data, errorCode: { type: 'null' }, errorMessage: { type: 'null' } },
      required: ['success', 'data', 'errorCode', 'errorMessage'],
    };
  } else {
    schema = {
      type: 'object',
      description: 'Envelope B on success.',
      properties: { data, meta: REF('schemas', 'Meta'), pagination: REF('schemas', 'Pagination') },
      required: ops.paginated ? ['data', 'meta', 'pagination'] : ['data', 'meta'],
    };
  }
  return { description: status === 201 ? 'Created' : 'OK', headers, content: { 'application/json': { schema } } };
}

function parameters(path: string, ops: OperationSchemas): Json[] {
  const out: Json[] = [];
  for (const m of path.matchAll(/\{([A-Za-z]+)(:str)?\}/g)) {
    out.push({ name: m[1], in: 'path', required: true, schema: m[2] ? STRING_PARAM : ID_PARAM });
  }
  if (ops.query) {
    const q = jsonSchema(ops.query, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      out.push({ name, in: 'query', required: (q.required ?? []).includes(name), schema });
    }
  }
  return out;
}

function requestBody(ops: OperationSchemas): Json | undefined {
  if (!ops.body) return undefined;
  // An absent body is `undefined` to the handler: a schema that accepts it makes the body optional.
  const required = !ops.body.safeParse(undefined).success;
  return { required, content: { 'application/json': { schema: jsonSchema(ops.body, 'input') } } };
}

const TITLES: Record<Api, string> = {
  v2: 'keygate workspace API (/v2)',
  v1: 'keygate partner API (/v1)',
};

/** The OpenAPI 3.1 document of one interface. `routes` is config/routes.json as read from disk. */
export function generateOpenApi(api: Api, rawRoutes: unknown): Json {
  const routes: RoutesFile = routesFileSchema.parse(rawRoutes);
  const errors = errorResponses(api);
  const errorRefs = Object.fromEntries(Object.keys(errors).map((n) => [n.slice('Error'.length), REF('responses', n)]));
  const security = api === 'v2' ? [{ bearerKey: [] }] : [{ partnerKey: [] }];
  const paths: Record<string, Record<string, Json>> = {};

  for (const r of routes[api]) {
    const key = `${r.method} ${r.path}`;
    const ops: OperationSchemas | undefined = r.gateway ? {} : SCHEMAS[key];
    if (!ops) throw new Error(`openapi: no schemas registered for ${key} (src/backend/*/schemas.ts)`);
    const op: Json = { operationId: operationId(r.method, r.path), parameters: parameters(r.path, ops) };
    const body = requestBody(ops);
    if (body) op.requestBody = body;
    const responses: Record<string, Json> = {};
    if (r.gateway) {
      // Answered by the gateway itself, spending no token (docs/decisions.md sections 3 and 4).
      const data = REF('schemas', 'RateLimitStatus');
      const schema =
        api === 'v1'
          ? data
          : { type: 'object', properties: { data, meta: REF('schemas', 'Meta') }, required: ['data', 'meta'] };
      responses['200'] = {
        description: 'OK',
        headers: responseHeaders(api, 200),
        content: { 'application/json': { schema } },
      };
    } else {
      for (const s of ops.status ?? [200]) responses[String(s)] = successResponse(api, ops, s);
    }
    Object.assign(responses, errorRefs);
    op.responses = responses;
    if (api === 'v2' && 'scope' in r) {
      op['x-keygate-scope'] = r.scope;
      op['x-keygate-min-role'] = r.scope ? routes.scopes[r.scope] : null;
      op['x-keygate-bucket'] = r.bucket;
    } else {
      // One bucket per partner key (docs/decisions.md section 4).
      op['x-keygate-bucket'] = 'partner';
    }
    op['x-keygate-answered-by'] = r.gateway ? 'gateway' : 'upstream';
    op['x-keygate-spends'] = !r.gateway;
    const p = r.path.replace(/:str\}/g, '}');
    (paths[p] ??= {})[r.method.toLowerCase()] = op;
  }

  // The descriptions themselves: served by the gateway without a key, spending nothing.
  paths[`/${api}/openapi.json`] = {
    get: {
      operationId: `${api}OpenApi`,
      security: [],
      responses: {
        '200': { description: 'This document.', content: { 'application/json': { schema: { type: 'object' } } } },
      },
      'x-keygate-answered-by': 'gateway',
      'x-keygate-spends': false,
    },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: TITLES[api],
      version: api,
      description:
        "Generated by `npm run openapi` from config/routes.json, the backend's zod schemas and src/http/errors.ts. " +
        "x-keygate-scope, x-keygate-min-role and x-keygate-bucket are the route table's; a request that reaches the rate limiter spends one token " +
        (api === 'v2'
          ? `in the key's bucket and one in the address layer (${IP_LIMIT} per minute).`
          : `of the key's ${V1_LIMIT} per minute.`),
    },
    security,
    paths,
    components: {
      securitySchemes:
        api === 'v2'
          ? {
              bearerKey: {
                type: 'http',
                scheme: 'bearer',
                description: 'Authorization: Bearer <svc_ws_ or svc_pk_ key>.',
              },
            }
          : { partnerKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'A svc_v1_ partner key.' } },
      headers: headers(api),
      schemas: envelopeSchemas(api),
      responses: errors,
    },
  };
}

/**
 * `GET /v2/workspaces/{workspaceId}/accounts/{accountId}` -> `getWorkspacesAccountsById`-like, unique per route;
 * `skip` is the number of leading segments left out (the empty one before the first `/` and the prefix's).
 */
export function operationId(method: string, path: string, skip = 2): string {
  const words = path
    .split('/')
    .slice(skip)
    .map((seg) => {
      const m = /^\{([A-Za-z]+)(:str)?\}$/.exec(seg);
      const w = m ? `by-${m[1]}` : seg;
      return w
        .split(/[^A-Za-z0-9]+/)
        .filter(Boolean)
        .map((x) => x[0].toUpperCase() + x.slice(1))
        .join('');
    });
  return method.toLowerCase() + words.join('');
}

/** The document as the checked-in file holds it: two-space JSON and a final newline. */
export function serialize(doc: unknown): string {
  return JSON.stringify(doc, null, 2) + '\n';
}

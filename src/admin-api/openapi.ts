// The admin API's description (OpenAPI 3.1), generated from its route table and zod schemas
// (src/admin-api/routes.ts, schemas.ts), as the /v2 and /v1 documents are from theirs. Served at
// GET /api (and /api/openapi.json) and written to config/openapi/admin.json by `npm run openapi`.
import { z } from 'zod';
import { ADMIN_ERRORS, type AdminErrorCode } from './errors.js';
import { ErrorSchema } from './schemas.js';
import { ROUTES } from './routes.js';
import { DB_ID_SOURCE } from '../config/contract.js';

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}

const errorRef = (code: AdminErrorCode) => ({ $ref: `#/components/responses/${code}` });

const ERROR_TEXT: Record<AdminErrorCode, string> = {
  invalid_request:
    'The input is not valid (a query parameter, the body, or a reference to something that does not fit).',
  unauthorized: 'No admin token, or one that is unknown or revoked.',
  forbidden: 'A read token on an operation that changes something.',
  not_found: 'No such route, or nothing with that id.',
  method_not_allowed: 'The path exists, not with this method.',
  conflict: 'The change does not apply to the current state (e.g. rotating a revoked key).',
  payload_too_large: 'The body is over 64 KiB.',
  unsupported_media_type: 'The body is not application/json.',
  too_many_attempts: 'Too many failed token attempts from this client address this minute (see Retry-After).',
  internal: 'An unexpected failure (logged with the request id).',
  service_unavailable: 'A store (PostgreSQL, Redis) did not answer.',
};

export function adminOpenApi(): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of ROUTES) {
    const params: Json[] = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string', pattern: DB_ID_SOURCE },
    }));
    for (const q of r.query ?? [])
      params.push({ name: q.name, in: 'query', required: false, description: q.description, schema: q.schema });
    const responses: Record<string, Json> = {
      [String(r.status)]: {
        description: r.summary.split(':')[0],
        content: Object.fromEntries(
          Object.entries(r.produces ?? { 'application/json': r.response }).map(([type, schema]) => [
            type,
            { schema: jsonSchema(schema, 'output') },
          ]),
        ),
      },
    };
    const codes: AdminErrorCode[] = ['unauthorized', 'too_many_attempts', 'service_unavailable', 'internal'];
    if (r.role === 'write') codes.push('forbidden');
    if (r.path.includes('{') || r.body) codes.push('not_found');
    if (r.role === 'write' && r.path.includes('{')) codes.push('conflict');
    if (r.query?.length || r.body) codes.push('invalid_request');
    if (r.body) codes.push('payload_too_large', 'unsupported_media_type');
    for (const c of codes) responses[String(ADMIN_ERRORS[c])] = errorRef(c);
    paths[r.path] ??= {};
    paths[r.path][r.method.toLowerCase()] = {
      summary: r.summary,
      operationId: `${r.method.toLowerCase()}${r.path
        .replace(/^\/api/, '')
        .replace(/\{(\w+)\}/g, 'By$1')
        .replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      description: `Needs a ${r.role} token${r.role === 'read' ? ' (a write token also reads)' : ''}.`,
      'x-admin-role': r.role,
      ...(params.length ? { parameters: params } : {}),
      ...(r.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'keygate admin API',
      version: '1',
      description:
        'Operate keygate over HTTP: organizations, workspaces, keys, live usage, traffic, the audit trail and admin tokens. ' +
        'Every operation needs `Authorization: Bearer <admin token>` (`keygate admin-tokens create --name ... --role read|write`); ' +
        'a read token may only read. Errors have one shape: `{"error":{"code","message","requestId"}}`. ' +
        `More than 10 failed token attempts a minute from one client address are refused with 429 too_many_attempts. No answer ever holds a stored secret or hash.`,
    },
    servers: [{ url: '/' }],
    security: [{ adminToken: [] }],
    paths,
    components: {
      securitySchemes: { adminToken: { type: 'http', scheme: 'bearer', description: 'An admin token (kga_...).' } },
      schemas: { Error: jsonSchema(ErrorSchema, 'output') },
      responses: Object.fromEntries(
        (Object.keys(ADMIN_ERRORS) as AdminErrorCode[]).map((c) => [
          c,
          {
            description: ERROR_TEXT[c],
            ...(c === 'too_many_attempts'
              ? {
                  headers: {
                    'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer', minimum: 1 } },
                  },
                }
              : {}),
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
          },
        ]),
      ),
    },
  };
}

// The API description of the backend's session-authenticated /api-keys routes (OpenAPI 3.1), from the
// zod schemas those routes parse (src/backend/api-keys/schemas.ts) and the key view of the service
// layer (src/access/service/keys.ts). config/openapi/api-keys.json is this function's output; a test
// keeps them equal.
import { z } from 'zod';
import { createSchema, listQuery, rotateSchema, updateSchema } from '../backend/api-keys/schemas.js';
import { METADATA_MAX_BYTES } from '../access/service/keys.js';
import { DB_ID_SOURCE } from '../config/contract.js';

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}

const nullable = (type: string, extra: Json = {}) => ({ type: [type, 'null'], ...extra });
const time = { type: 'string', format: 'date-time' };

const KEY: Json = {
  type: 'object',
  required: [
    'id',
    'name',
    'type',
    'hint',
    'workspaceId',
    'userId',
    'role',
    'scopes',
    'createdBy',
    'createdAt',
    'revokedAt',
    'expiresAt',
    'status',
    'metadata',
    'lastUsedAt',
    'rotatedAt',
    'previousSecret',
  ],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    type: { enum: ['workspace', 'personal', 'partner'] },
    hint: { type: 'string', description: 'The prefix and four characters of the current secret; never enough to use.' },
    workspaceId: nullable('integer'),
    userId: nullable('integer'),
    role: { enum: ['VIEWER', 'EDITOR', 'ADMIN', 'OWNER', null] },
    scopes: { type: 'array', items: { type: 'string' } },
    createdBy: nullable('integer'),
    createdAt: time,
    revokedAt: nullable('string', { format: 'date-time' }),
    expiresAt: nullable('string', {
      format: 'date-time',
      description: 'From this instant the key is refused (401 150002); null: never.',
    }),
    status: { enum: ['active', 'expired', 'revoked'] },
    metadata: nullable('object', {
      description: `Sent to the upstream in the signed identity; at most ${METADATA_MAX_BYTES} bytes as JSON.`,
    }),
    lastUsedAt: nullable('string', {
      format: 'date-time',
      description: 'The last use of any of its secrets, to the minute.',
    }),
    rotatedAt: nullable('string', { format: 'date-time' }),
    previousSecret: {
      description: 'The secret a rotation replaced, while its grace period runs.',
      oneOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['hint', 'expiresAt', 'lastUsedAt'],
          properties: {
            hint: { type: 'string' },
            expiresAt: time,
            lastUsedAt: nullable('string', { format: 'date-time' }),
          },
        },
      ],
    },
  },
};
const WITH_SECRET: Json = {
  allOf: [
    { $ref: '#/components/schemas/Key' },
    {
      type: 'object',
      required: ['secret'],
      properties: { secret: { type: 'string', description: 'Shown once; only a keyed hash is stored.' } },
    },
  ],
};

const envelope = (data: Json): Json => ({
  type: 'object',
  required: ['success', 'data', 'errorCode', 'errorMessage'],
  properties: { success: { const: true }, data, errorCode: { type: 'null' }, errorMessage: { type: 'null' } },
});
const ok = (description: string, data: Json, status = '200'): Json => ({
  [status]: { description, content: { 'application/json': { schema: envelope(data) } } },
});
const errors = (codes: string[]): Json =>
  Object.fromEntries(
    [...new Set(codes.map((c) => c.split(':')[0]))].map((status) => [
      status,
      {
        description: codes
          .filter((c) => c.startsWith(status))
          .map((c) => c.split(':')[1])
          .join(', '),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );
const body = (schema: z.ZodType): Json => ({
  required: true,
  content: { 'application/json': { schema: jsonSchema(schema, 'input') } },
});
const KEY_ID = { name: 'keyId', in: 'path', required: true, schema: { type: 'string', pattern: DB_ID_SOURCE } };
const AUTH = ['401:150001 no session, 150002 unknown or expired session'];

const COMPONENTS = {
  securitySchemes: { session: { type: 'apiKey', in: 'cookie', name: 'session' } },
  schemas: {
    Key: KEY,
    Error: {
      type: 'object',
      required: ['success', 'data', 'errorCode', 'errorMessage'],
      properties: {
        success: { const: false },
        data: { type: 'null' },
        errorCode: { type: 'string' },
        errorMessage: { type: 'string' },
      },
    },
  },
};

/** POST and GET /api-keys: create a key, list the organization's. */
function collectionPath(): Json {
  const query = jsonSchema(listQuery, 'input') as { properties: Record<string, Json> };
  return {
    post: {
      operationId: 'createKey',
      requestBody: body(createSchema),
      responses: {
        ...ok('The key and its secret, shown once.', WITH_SECRET, '201'),
        ...errors([
          '400:150101 workspace key without workspaceId, invalid_request',
          ...AUTH,
          "403:150102 role above the creator's, 150103 no access to the workspace",
        ]),
      },
    },
    get: {
      operationId: 'listKeys',
      parameters: Object.entries(query.properties).map(([name, schema]) => ({
        name,
        in: 'query',
        required: false,
        schema,
      })),
      responses: {
        ...ok("The organization's keys, without secrets.", {
          type: 'array',
          items: { $ref: '#/components/schemas/Key' },
        }),
        ...errors(['400:invalid_request', ...AUTH]),
      },
    },
  };
}

/** GET, PATCH and DELETE /api-keys/{keyId}: read, change and revoke one key. */
function keyPath(): Json {
  return {
    parameters: [KEY_ID],
    get: {
      operationId: 'getKey',
      responses: {
        ...ok('The key.', { $ref: '#/components/schemas/Key' }),
        ...errors([...AUTH, '404:150104 no such key of the organization']),
      },
    },
    patch: {
      operationId: 'updateKey',
      requestBody: body(updateSchema),
      responses: {
        ...ok('The key as changed.', { $ref: '#/components/schemas/Key' }),
        ...errors([
          '400:invalid_request',
          ...AUTH,
          '404:150104 no such key of the organization',
          '409:conflict the key is revoked',
        ]),
      },
    },
    delete: {
      operationId: 'revokeKey',
      responses: {
        ...ok('The revoked key.', { $ref: '#/components/schemas/Key' }),
        ...errors([...AUTH, '404:150104 no such key of the organization']),
      },
    },
  };
}

/** POST /api-keys/{keyId}/rotate. */
function rotatePath(): Json {
  return {
    parameters: [KEY_ID],
    post: {
      operationId: 'rotateKey',
      requestBody: body(rotateSchema),
      responses: {
        ...ok(
          'The key with its new secret, shown once; the old one works until previousSecret.expiresAt.',
          WITH_SECRET,
        ),
        ...errors([
          '400:invalid_request',
          ...AUTH,
          '404:150104 no such key of the organization',
          '409:conflict the key is revoked',
        ]),
      },
    },
  };
}

export function generateApiKeysOpenApi(): Json {
  return {
    openapi: '3.1.0',
    info: {
      title: 'keygate backend: /api-keys',
      version: '1',
      description:
        'Key management of an organization by its users (cookie session=<token>), Envelope A. Every change goes through the service layer, is audited with the session user as actor, and applies to the very next request on every gateway.',
    },
    components: COMPONENTS,
    security: [{ session: [] }],
    paths: {
      '/api-keys': collectionPath(),
      '/api-keys/{keyId}': keyPath(),
      '/api-keys/{keyId}/rotate': rotatePath(),
    },
  };
}

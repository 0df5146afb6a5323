// config/openapi/api-keys.json: the checked-in output of `npm run openapi`, and true to real answers
// of the backend's /api-keys (every field of a key, no other).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKeysOpenApi } from '../../src/openapi/api-keys.js';
import { serialize } from '../../src/openapi/generate.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

const doc = JSON.parse(readFileSync('config/openapi/api-keys.json', 'utf8'));

describe('the /api-keys API description', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s?.close());

  it('is the checked-in output of npm run openapi', () => {
    expect(readFileSync('config/openapi/api-keys.json', 'utf8')).toBe(serialize(generateApiKeysOpenApi()));
  });

  it('describes every route the backend answers, and a key exactly as it is answered', async () => {
    expect(Object.keys(doc.paths)).toEqual(['/api-keys', '/api-keys/{keyId}', '/api-keys/{keyId}/rotate']);
    const made = await s.session('POST', '/api-keys', K.session, {
      name: 'doc',
      type: 'personal',
      scopes: ['workspace:read'],
      metadata: { a: 1 },
    });
    expect(made.status).toBe(201);
    const { secret: _secret, ...key } = made.body.data;
    expect(Object.keys(key).sort()).toEqual([...doc.components.schemas.Key.required].sort());
    for (const [path, method] of [
      [`/api-keys/${key.id}`, 'GET'],
      [`/api-keys/${key.id}`, 'PATCH'],
      [`/api-keys/${key.id}/rotate`, 'POST'],
    ] as const) {
      const r = await s.session(
        method,
        path,
        K.session,
        method === 'GET' ? undefined : method === 'PATCH' ? { name: 'doc2' } : {},
      );
      expect(r.status, path).toBe(200);
      expect(
        Object.keys(r.body.data)
          .filter((k) => k !== 'secret')
          .sort(),
      ).toEqual([...doc.components.schemas.Key.required].sort());
    }
    // The request schemas refuse what the routes refuse.
    expect(doc.paths['/api-keys'].post.requestBody.content['application/json'].schema.additionalProperties).toBe(false);
  });
});

// The API descriptions (config/openapi/v2.json, v1.json): valid OpenAPI 3.1 by a maintained validator,
// equal to a fresh generation (so they cannot drift from config/routes.json, the backend's schemas and
// the error tables), and complete: every route with its scope, minimum role and bucket, every error code
// with its status, the rate-limit headers and the security schemes.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { generateOpenApi, serialize } from '../../src/openapi/generate.js';
import { ENVELOPE_A, ENVELOPE_B, V1_ERRORS } from '../../src/http/errors.js';
import { SCHEMAS } from '../../src/backend/schemas.js';

type Json = Record<string, any>;
const routesRaw = JSON.parse(readFileSync('config/routes.json', 'utf8'));
const routes = routesRaw as { scopes: Record<string, string>; v2: Json[]; v1: Json[] };
const read = (api: string) => readFileSync(`config/openapi/${api}.json`, 'utf8');

describe.each(['v2', 'v1'] as const)('%s description', (api) => {
  const doc: Json = JSON.parse(read(api));

  it('is the checked-in output of npm run openapi (regenerate after changing routes, schemas or error codes)', () => {
    expect(read(api)).toBe(serialize(generateOpenApi(api, routesRaw)));
  });

  it('is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('has every route of config/routes.json with its scope, minimum role and bucket', () => {
    for (const r of routes[api]) {
      const op = doc.paths[r.path.replace(/:str\}/g, '}')]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      if (api === 'v2') {
        expect(op['x-keygate-scope']).toBe(r.scope);
        expect(op['x-keygate-min-role']).toBe(r.scope ? routes.scopes[r.scope] : null);
        expect(op['x-keygate-bucket']).toBe(r.bucket);
      } else expect(op['x-keygate-bucket']).toBe('partner');
      // The gateway's own reads spend nothing (docs/decisions.md sections 3 and 4).
      expect(op['x-keygate-spends']).toBe(r.gateway !== true);
    }
    const documented = Object.values(doc.paths).reduce((n: number, ops: any) => n + Object.keys(ops).length, 0);
    expect(documented).toBe(routes[api].length + 1); // + the description itself
  });

  it('names every error code of the interface with its status, on every operation', () => {
    const codes: [string, number][] =
      api === 'v2'
        ? [
            ...['150001', '150002', '150003', '150004', '150005', '150006', '150007', '040006'].map(
              (c): [string, number] => [c, ENVELOPE_A[c as '150001'].status],
            ),
            ...Object.entries(ENVELOPE_B),
          ]
        : Object.entries(V1_ERRORS);
    for (const [code, status] of codes) {
      const resp = doc.components.responses[`Error${status}`];
      expect(resp?.description.split(', '), `${code} ${status}`).toContain(code);
    }
    for (const ops of Object.values(doc.paths) as Json[]) {
      for (const op of Object.values(ops) as Json[]) {
        if (op.security?.length === 0) continue; // the description itself
        for (const status of new Set(codes.map(([, s]) => s)))
          expect(op.responses[String(status)]).toEqual({ $ref: `#/components/responses/Error${status}` });
      }
    }
  });

  it('documents the rate-limit headers and the security scheme', () => {
    const names = [
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'RateLimit-Policy',
      'RateLimit',
      'Retry-After',
    ];
    if (api === 'v2') names.push('X-RateLimit-IP-Limit', 'X-RateLimit-IP-Remaining');
    expect(Object.keys(doc.components.headers)).toEqual(expect.arrayContaining(names));
    expect(Object.keys(doc.components.responses.Error429.headers)).toContain('Retry-After');
    expect(doc.components.securitySchemes).toEqual(
      api === 'v2'
        ? { bearerKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }) }
        : { partnerKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Api-Key' }) },
    );
  });
});

describe('schema registry', () => {
  it('describes only routes of config/routes.json', () => {
    const known = new Set([...routes.v2, ...routes.v1].map((r) => `${r.method} ${r.path}`));
    expect(Object.keys(SCHEMAS).filter((k) => !known.has(k))).toEqual([]);
  });

  it("documents request bodies and queries from the handlers' own zod schemas", () => {
    const v2: Json = JSON.parse(read('v2'));
    const invite = v2.paths['/v2/workspaces/{workspaceId}/members'].post.requestBody;
    expect(invite.required).toBe(true);
    expect(invite.content['application/json'].schema).toMatchObject({
      additionalProperties: false,
      required: ['email', 'role'],
    });
    const list = v2.paths['/v2/workspaces/{workspaceId}/notifications'].get.parameters.map(
      (p: Json) => `${p.in}:${p.name}`,
    );
    expect(list).toEqual(['path:workspaceId', 'query:unreadOnly', 'query:limit', 'query:cursor']);
    const v1: Json = JSON.parse(read('v1'));
    expect(v1.paths['/v1/workspaces/{workspaceId}/preview'].get.parameters[0]).toMatchObject({
      name: 'workspaceId',
      in: 'path',
      schema: { pattern: '^[A-Za-z0-9_-]{1,64}$' },
    });
  });
});

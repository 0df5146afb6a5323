// The API description of a rest profile (src/openapi/profile.ts): valid OpenAPI 3.1 by a maintained
// validator, and each route, key presentation, header family and refusal of the profile as the profile
// states it; the workspace API's checked-in documents untouched by it.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { generateProfileOpenApi, openApiDocuments, routeRefusals } from '../../src/openapi/profile.js';
import { REFUSAL_NAMES } from '../../src/config/profile/refusals.js';
import { workspaceProfile } from '../../src/config/profile/workspace.js';
import { loadRoutes } from '../../src/config/routes.js';
import { loadPlans } from '../../src/config/plans.js';
import { loadProfile } from '../../src/config/profile/load.js';
import { restProfile, SHOP_ROUTES } from '../fixtures/profiles/d-rest.js';

type Json = Record<string, any>;

const docOf = (p = restProfile()): Json =>
  JSON.parse(openApiDocuments(p).get(`${p.interfaces[0].prefix}/openapi.json`)!.toString());

async function validate(doc: Json): Promise<void> {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
  expect(validator.version).toBe('3.1');
}

/** Every operation of a document but the document's own. */
function operations(doc: Json): [string, string, Json][] {
  return Object.entries(doc.paths as Json).flatMap(([path, ops]) =>
    Object.entries(ops as Json)
      .filter(([, op]) => (op as Json).security?.length !== 0)
      .map(([m, op]): [string, string, Json] => [m.toUpperCase(), path, op as Json]),
  );
}

/** A response as a $ref resolves it. */
const resolve = (doc: Json, r: Json): Json => (r.$ref ? doc.components.responses[r.$ref.split('/').pop()] : r);

describe('the OpenAPI document of a rest profile', () => {
  it('is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator), whatever the key field and families', async () => {
    await validate(docOf());
    await validate(
      docOf(restProfile({ header: 'x-shop-key', addressLimit: null, headers: { xRateLimit: false, ietf: true } })),
    );
    await validate(docOf(restProfile({ prefix: '/shop/v3', headers: { xRateLimit: true, ietf: false } })));
  });

  it('is served at <prefix>/openapi.json, and only for a problem-details interface', () => {
    const p = restProfile({ prefix: '/shop/v3' });
    expect([...openApiDocuments(p).keys()]).toEqual(['/shop/v3/openapi.json']);
    const ws = workspaceProfile(loadRoutes('config/routes.json'), loadPlans('config/plans.json'));
    expect(openApiDocuments(ws).size).toBe(0);
    expect(() => generateProfileOpenApi(ws, ws.interfaces[0])).toThrow(/config\/openapi\/v2\.json/);
  });

  it('has every route, its typed path parameters, scope, bucket and service', () => {
    const doc = docOf();
    expect(operations(doc)).toHaveLength(SHOP_ROUTES.length);
    for (const r of SHOP_ROUTES) {
      const op = doc.paths[`/api${r.path.replace(':str}', '}')}`]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      expect(op['x-keygate-scope']).toBe(r.scope);
      expect(op['x-keygate-bucket']).toBe(r.bucket);
      expect(op['x-keygate-spends']).toBe(!r.gateway);
      expect(op['x-keygate-answered-by']).toBe(r.gateway ? 'gateway' : 'upstream');
      if (r.scope) {
        expect(op.description).toContain(`\`${r.scope}\``);
        expect(op.security).toEqual([{ apiKey: [r.scope] }]);
      } else expect(op.security).toBeUndefined();
      if (!r.gateway) expect(op['x-keygate-service']).toBe(r.service);
    }
    const order = doc.paths['/api/orders/{orderId}'].get.parameters;
    expect(order).toEqual([
      {
        name: 'orderId',
        in: 'path',
        required: true,
        schema: expect.objectContaining({ pattern: '^[1-9][0-9]{0,15}$' }),
      },
    ]);
    const sku = doc.paths['/api/catalog/{sku}'].get.parameters;
    expect(sku[0].schema.pattern).toBe('^[A-Za-z0-9_-]{1,64}$');
    const ids = operations(doc).map(([, , op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain('getOrdersByOrderId');
  });

  it('the security scheme is the key presentation: a bearer token, or the key alone in its field', () => {
    expect(docOf().components.securitySchemes).toEqual({
      apiKey: expect.objectContaining({
        type: 'http',
        scheme: 'bearer',
        description: expect.stringContaining('shop_'),
      }),
    });
    expect(docOf(restProfile({ header: 'x-shop-key' })).components.securitySchemes).toEqual({
      apiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Shop-Key' }),
    });
    expect(docOf().security).toEqual([{ apiKey: [] }]);
    expect(docOf().paths['/api/openapi.json'].get.security).toEqual([]);
  });

  it("each refusal a route can give is a problem+json answer with the profile's status, type, title and code", () => {
    const p = restProfile({
      refusals: {
        insufficient_scope: { status: 403, code: 'missing-scope', title: 'The key may not call this route.' },
        rate_limited: { code: 'slow-down', type: 'https://errors.example/slow-down' },
      },
    });
    const doc = docOf(p);
    const problems = p.interfaces[0].errors.format === 'problem' ? p.interfaces[0].errors.problems : null;
    for (const [method, path, op] of operations(doc)) {
      const route = SHOP_ROUTES.find((r) => r.method === method && `/api${r.path.replace(':str}', '}')}` === path)!;
      const expected = routeRefusals({ scope: route.scope, gateway: route.gateway === true });
      const found: string[] = [];
      for (const [status, ref] of Object.entries(op.responses as Json)) {
        if (!/^\d{3}$/.test(status) || status === '200') continue;
        const schema = resolve(doc, ref as Json).content['application/problem+json'].schema;
        for (const v of schema.oneOf ?? [schema]) {
          expect(v.allOf[0]).toEqual({ $ref: '#/components/schemas/Problem' });
          const c = v.allOf[1].properties;
          expect(String(c.status.const)).toBe(status);
          const name = REFUSAL_NAMES.find((n) => problems![n].code === c.code.const)!;
          expect(c).toEqual({
            type: { const: problems![name].type },
            title: { const: problems![name].title },
            status: { const: problems![name].status },
            code: { const: problems![name].code },
          });
          found.push(name);
        }
      }
      expect(found.sort(), `${method} ${path}`).toEqual([...expected].sort());
    }
    // The scope's refusal only where there is a scope; the limits' only where the route spends.
    expect(routeRefusals({ scope: null, gateway: false })).not.toContain('insufficient_scope');
    expect(routeRefusals({ scope: 'orders:read', gateway: true })).not.toContain('rate_limited');
    expect(routeRefusals({ scope: 'orders:read', gateway: false })).toEqual(
      expect.arrayContaining(['insufficient_scope', 'rate_limited', 'quota_exhausted', 'bad_gateway']),
    );
    const limited = resolve(doc, doc.paths['/api/orders'].get.responses['429']).content['application/problem+json'];
    expect(limited.schema.oneOf.map((v: Json) => v.allOf[1].properties.type.const)).toEqual([
      'https://shop.example/problems/too-many-failures',
      'https://errors.example/slow-down',
      'https://shop.example/problems/quota-exhausted',
    ]);
    expect(doc.components.schemas.Problem.required).toEqual(['type', 'title', 'status', 'code']);
  });

  it("the rate-limit fields are the profile's families, the address layer's only with one", () => {
    const names = (doc: Json, path: string, status: string) =>
      Object.keys(resolve(doc, doc.paths[path].get.responses[status]).headers).sort();
    const both = docOf();
    expect(names(both, '/api/orders', '429')).toEqual(
      [
        'X-Request-Id',
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
        'X-RateLimit-IP-Limit',
        'X-RateLimit-IP-Remaining',
        'RateLimit-Policy',
        'RateLimit',
        'Retry-After',
      ].sort(),
    );
    expect(names(both, '/api/orders', '2XX')).not.toContain('Retry-After');
    const ietf = docOf(restProfile({ addressLimit: null, headers: { xRateLimit: false, ietf: true } }));
    expect(names(ietf, '/api/orders', '2XX')).toEqual(['RateLimit', 'RateLimit-Policy', 'X-Request-Id']);
    expect(Object.keys(ietf.components.headers).sort()).toEqual([
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
      'X-Request-Id',
    ]);
    expect(ietf.components.headers['RateLimit-Policy'].description).not.toContain('"ip"');
    const x = docOf(restProfile({ headers: { xRateLimit: true, ietf: false } }));
    expect(names(x, '/api/orders', '2XX')).not.toContain('RateLimit-Policy');
    expect(x.components.headers['X-RateLimit-IP-Limit'].description).toContain('100 per minute');
  });

  it("the gateway's status route: its body, and no limit refusal", () => {
    const doc = docOf();
    const op = doc.paths['/api/rate-limit'].get;
    expect(op.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/RateLimitStatus',
    });
    expect(op.responses['429']).toBeDefined(); // the address's cooldown after failed keys
    const s = doc.components.schemas.RateLimitStatus;
    expect(s.required).toEqual(['plan', 'windowSeconds', 'buckets', 'ip']);
    expect(s.properties.plan.enum).toEqual(['free', 'pro']);
    const none = docOf(restProfile({ addressLimit: null })).components.schemas.RateLimitStatus;
    expect(none.required).not.toContain('ip');
    expect(none.properties.ip).toBeUndefined();
    expect(doc.info.description).toContain(
      '`pro`: 600 read, 200 write, 50 bulk per minute; 1000000 requests per month',
    );
  });

  it('two routes the gateway tells apart but OpenAPI cannot ({id} and {id:str}) are refused naming them', () => {
    const p = restProfile();
    const table = p.routes.tables.shop;
    const def = table.all.find((r) => r.path === '/api/orders/{orderId}')!;
    table.add({ ...def, path: '/api/orders/{orderId:str}' });
    expect(() => openApiDocuments(p)).toThrow(/GET \/api\/orders\/\{orderId:str\}.*\/api\/orders\/\{orderId\}/);
  });

  it("the workspace API's checked-in documents are still its own generator's", async () => {
    const { generateOpenApi, serialize } = await import('../../src/openapi/generate.js');
    const raw = JSON.parse(readFileSync('config/routes.json', 'utf8'));
    for (const api of ['v2', 'v1'] as const)
      expect(readFileSync(`config/openapi/${api}.json`, 'utf8')).toBe(serialize(generateOpenApi(api, raw)));
  });
});

/** `npm run openapi -- <args>` without npm's own lines: the command's entry point under tsx. */
function openapi(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', 'src/openapi/cli.ts', ...args],
      { timeout: 60_000, env: { PATH: process.env.PATH } },
      (_e, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

// Each test runs the command under tsx two or three times: 7 s on a quiet machine, past the default 30 s
// beside the rest of the suite on two busy cores.
describe('npm run openapi -- --profile', { timeout: 120_000 }, () => {
  const FIXTURE = 'test/fixtures/profiles/d-shop.yaml';
  const dir = mkdtempSync(join(tmpdir(), 'kg-openapi-'));

  it("writes the profile's document, valid and equal to the gateway's; --check tells a stale one", async () => {
    const out = join(dir, 'shop.json');
    const wrote = await openapi(['--profile', FIXTURE, '--out', out]);
    expect(wrote).toMatchObject({ code: 0, stdout: `wrote ${out}\n` });
    const profile = loadProfile({
      PROFILE_FILE: FIXTURE,
      ROUTES_FILE: 'config/routes.json',
      PLANS_FILE: 'config/plans.json',
    });
    expect(readFileSync(out)).toEqual(openApiDocuments(profile).get('/api/openapi.json'));
    const doc = JSON.parse(readFileSync(out, 'utf8'));
    await validate(doc);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Shop-Key' });
    expect((await openapi(['--profile', FIXTURE, '--out', out, '--check'])).code).toBe(0);
    writeFileSync(out, '{}\n');
    const stale = await openapi(['--profile', FIXTURE, '--out', out, '--check']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`${out} is out of date`);
  });

  it('a mistake in the profile, or a workspace profile, is one line and exit code 2', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, readFileSync(FIXTURE, 'utf8').replace('service: orders }', 'service: billing }'));
    const r = await openapi(['--profile', bad, '--out', join(dir, 'x.json')]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^openapi: profile .*bad\.yaml: routes\.0\.service: .*billing/),
    ]);
    const ws = await openapi(['--profile', 'profiles/workspace.yaml']);
    expect(ws.code).toBe(2);
    expect(ws.stderr).toMatch(/run npm run openapi without --profile/);
  });
});

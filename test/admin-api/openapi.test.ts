// The admin API's description: valid OpenAPI 3.1, the checked-in config/openapi/admin.json equal to a
// fresh generation and to what GET /api serves, and checked against real answers: every operation is
// called for real and its status and body must be the documented ones (JSON Schema 2020-12, ajv).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { adminOpenApi } from '../../src/admin-api/openapi.js';
import { ROUTES } from '../../src/admin-api/routes.js';
import { serialize } from '../../src/openapi/generate.js';
import { createAdminToken } from '../../src/access/service/admin-tokens.js';
import { getPepper } from '../../src/access/pepper.js';
import { systemClock } from '../../src/ops/clock.js';
import { startStack, fetchRes, type Res, type Stack } from '../helpers/stack.js';

type Json = Record<string, any>;
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ??
  addFormatsModule) as unknown as AddFormats;

const doc: Json = adminOpenApi();
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addSchema(doc, 'https://keygate.test/admin');

function check(method: string, path: string, r: Res) {
  const op = doc.paths[path]?.[method.toLowerCase()];
  expect(op, `${method} ${path} documented`).toBeDefined();
  let resp = op.responses[String(r.status)];
  expect(resp, `${method} ${path} answered ${r.status}: ${r.text}`).toBeDefined();
  let pointer = `#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method.toLowerCase()}/responses/${r.status}/content/application~1json/schema`;
  if (resp.$ref) {
    const name = resp.$ref.split('/').pop();
    resp = doc.components.responses[name];
    pointer = `#/components/responses/${name}/content/application~1json/schema`;
  }
  const validate = ajv.getSchema(`https://keygate.test/admin${encodeURI(pointer)}`)!;
  expect(validate(r.body), `${method} ${path} ${r.status}: ${JSON.stringify(validate.errors)}`).toBe(true);
}

describe('the document', () => {
  it('is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(validator.version).toBe('3.1');
  });

  it('is the checked-in config/openapi/admin.json (npm run openapi) and lists every route with its role', () => {
    expect(readFileSync('config/openapi/admin.json', 'utf8')).toBe(serialize(doc));
    for (const r of ROUTES) expect(doc.paths[r.path][r.method.toLowerCase()]['x-admin-role']).toBe(r.role);
  });
});

describe('against real answers', () => {
  let stack: Stack;
  let token = '';
  let readToken = '';
  const call = (method: string, path: string, body?: unknown, t = token) =>
    fetchRes(stack.app.adminApiUrl! + path, {
      method,
      headers: { authorization: `Bearer ${t}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    stack = await startStack({ env: { ADMIN_API_PORT: '0' } });
    const ctx = {
      db: stack.db,
      pepper: await getPepper(stack.db),
      clock: systemClock,
      actor: { kind: 'cli' as const, osUser: 'test' },
    };
    token = (await createAdminToken(ctx, { name: 'contract', role: 'write' })).token;
    readToken = (await createAdminToken(ctx, { name: 'contract-read', role: 'read' })).token;
  });
  afterAll(() => stack?.close());

  it('GET /api serves the document, without a token', async () => {
    const r = await fetchRes(stack.app.adminApiUrl + '/api', {});
    expect(r.status).toBe(200);
    expect(r.body).toEqual(doc);
  });

  it('every operation answers as documented, and so do its refusals', async () => {
    // An endpoint nothing listens on: the key made below leaves it a pending delivery to list and replay.
    const hook = await call('POST', '/api/webhooks', { url: 'http://127.0.0.1:9/hooks', eventTypes: ['key.created'] });
    const hookPath = `/api/webhooks/${hook.body.id}`;
    const made = await call('POST', '/api/keys', {
      type: 'workspace',
      name: 'contract',
      workspaceId: 100,
      scopes: ['accounts:read'],
    });
    const keyId = made.body.id;
    const tokenMade = await call('POST', '/api/admin-tokens', { name: 'made', role: 'read' });
    const deliveryId = (await call('GET', `${hookPath}/deliveries`)).body.items[0].id;
    const calls: [string, string, string, unknown?][] = [
      ['GET', '/api/webhooks', '/api/webhooks?limit=5'],
      ['GET', '/api/webhooks/{id}', hookPath],
      ['PATCH', '/api/webhooks/{id}', hookPath, { description: 'contract', enabled: false }],
      ['POST', '/api/webhooks/{id}/rotate-secret', `${hookPath}/rotate-secret`],
      ['GET', '/api/webhooks/{id}/deliveries', `${hookPath}/deliveries?status=pending&limit=5`],
      ['POST', '/api/webhooks/{id}/deliveries/{deliveryId}/replay', `${hookPath}/deliveries/${deliveryId}/replay`],
      ['GET', '/api/me', '/api/me'],
      ['GET', '/api/organizations', '/api/organizations?limit=1'],
      ['GET', '/api/organizations/{id}', '/api/organizations/1'],
      ['PATCH', '/api/organizations/{id}', '/api/organizations/2', { paused: true }],
      ['GET', '/api/organizations/{id}/traffic', '/api/organizations/1/traffic'],
      ['PATCH', '/api/organizations/{id}/limits', '/api/organizations/1/limits', { read: 50, monthlyQuota: 100000 }],
      ['GET', '/api/organizations/{id}/limits', '/api/organizations/1/limits'],
      ['PATCH', '/api/keys/{id}/limits', `/api/keys/${keyId}/limits`, { bulk: 2, write: null }],
      ['GET', '/api/keys/{id}/limits', `/api/keys/${keyId}/limits`],
      ['GET', '/api/workspaces', '/api/workspaces?organization=1'],
      ['GET', '/api/keys', '/api/keys?organization=1&type=workspace&status=active&limit=2'],
      ['GET', '/api/keys/{id}', `/api/keys/${keyId}`],
      ['GET', '/api/keys/{id}/usage', `/api/keys/${keyId}/usage?ip=203.0.113.9`],
      ['PATCH', '/api/keys/{id}', `/api/keys/${keyId}`, { name: 'renamed', metadata: { team: 'ops' } }],
      ['POST', '/api/keys/{id}/rotate', `/api/keys/${keyId}/rotate`, { graceSeconds: 60 }],
      ['GET', '/api/audit', '/api/audit?action=key.&limit=5'],
      ['POST', '/api/keys/{id}/expire', `/api/keys/${keyId}/expire`, {}],
      ['POST', '/api/keys/{id}/revoke', `/api/keys/${keyId}/revoke`],
      ['GET', '/api/admin-tokens', '/api/admin-tokens'],
      ['POST', '/api/admin-tokens/{id}/revoke', `/api/admin-tokens/${tokenMade.body.id}/revoke`],
      ['GET', '/api/keys/{id}/usage/history', `/api/keys/${keyId}/usage/history`],
      ['GET', '/api/organizations/{id}/usage/history', '/api/organizations/1/usage/history?granularity=day'],
      ['GET', '/api/overview', '/api/overview'],
      ['GET', '/api/search', '/api/search?q=acme'],
      ['GET', '/api/scopes', '/api/scopes'],
      ['GET', '/api/plans', '/api/plans'],
      ['GET', '/api/profile', '/api/profile'],
      ['POST', '/api/organizations', '/api/organizations', { name: 'contract', plan: 'starter', limits: { read: 30 } }],
    ];
    check('POST', '/api/keys', made);
    check('POST', '/api/admin-tokens', tokenMade);
    check('POST', '/api/webhooks', hook);
    const seen = new Set(['POST /api/keys', 'POST /api/admin-tokens', 'POST /api/webhooks']);
    for (const [method, path, url, body] of calls) {
      const r = await call(method, url, body);
      expect(r.status, `${method} ${url}: ${r.text}`).toBeLessThan(300);
      check(method, path, r);
      seen.add(`${method} ${path}`);
    }
    // The export is CSV or JSON lines, as its media types say.
    const csv = await call('GET', '/api/usage/export?month=2026-11');
    expect([csv.status, csv.headers.get('content-type')]).toEqual([200, 'text/csv; charset=utf-8']);
    expect(Object.keys(doc.paths['/api/usage/export'].get.responses['200'].content)).toEqual([
      'text/csv',
      'application/x-ndjson',
    ]);
    check('GET', '/api/usage/export', await call('GET', '/api/usage/export?month=11'));
    seen.add('GET /api/usage/export');
    expect([...seen].sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());

    check('GET', '/api/me', await call('GET', '/api/me', undefined, 'kga_' + 'n'.repeat(40)));
    check('POST', '/api/keys', await call('POST', '/api/keys', { type: 'workspace' }, readToken));
    check('POST', '/api/keys', await call('POST', '/api/keys', { type: 'partner', name: 'x' }));
    check('GET', '/api/keys/{id}', await call('GET', '/api/keys/999999'));
    check('GET', '/api/keys', await call('GET', '/api/keys?limit=0'));
    check('POST', '/api/keys/{id}/rotate', await call('POST', `/api/keys/${keyId}/rotate`, {}));

    // The usage with the organization's quota set above: the month's counter, read without spending.
    const usage = await call('GET', `/api/keys/${keyId}/usage`);
    check('GET', '/api/keys/{id}/usage', usage);
    expect(usage.body.monthlyQuota).toMatchObject({ limit: 100000, used: 0, remaining: 100000 });
    const limitRefusals: [string, string, string, unknown, number][] = [
      ['PATCH', '/api/organizations/{id}/limits', '/api/organizations/1/limits', {}, 400],
      ['PATCH', '/api/organizations/{id}/limits', '/api/organizations/1/limits', { read: 0 }, 400],
      ['PATCH', '/api/organizations/{id}/limits', '/api/organizations/999999/limits', { read: 5 }, 404],
      ['PATCH', '/api/keys/{id}/limits', `/api/keys/${keyId}/limits`, { monthlyQuota: 5 }, 400],
      ['PATCH', '/api/keys/{id}/limits', '/api/keys/999999/limits', { read: 5 }, 404],
    ];
    for (const [method, path, url, body, status] of limitRefusals) {
      const r = await call(method, url, body);
      expect(r.status, `${method} ${url} ${JSON.stringify(body)}: ${r.text}`).toBe(status);
      check(method, path, r);
    }
    for (const [path, url] of [
      ['/api/organizations/{id}/limits', '/api/organizations/999999/limits'],
      ['/api/keys/{id}/limits', '/api/keys/999999/limits'],
    ]) {
      const r = await call('GET', url);
      expect(r.status).toBe(404);
      check('GET', path, r);
    }
    check('PATCH', '/api/keys/{id}/limits', await call('PATCH', `/api/keys/${keyId}/limits`, { read: 5 }, readToken));
  });
});

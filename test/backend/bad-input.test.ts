// Bad input gets a clear error in the interface's own envelope, never a 500: every route with a body,
// fed the shapes a careless or hostile client sends.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { concretePath } from '../helpers/routes.js';

const file = JSON.parse(readFileSync('config/routes.json', 'utf8'));
const concrete = (p: string) =>
  concretePath(p, (name) =>
    name === 'workspaceId' ? '100' : name === 'accountId' || name === 'emailAccountId' ? '5000' : '1',
  );
const BODIES: [string, string][] = [
  ['invalid JSON', '{"a":'],
  ['null', 'null'],
  ['an array', '[1,2,3]'],
  ['a string', '"hello"'],
  ['a number', '42'],
  ['an unknown field', '{"surprise":true}'],
  ['wrong types', '{"name":5,"emailAddress":[],"accountIds":"x","quotas":{},"role":7,"warmupMaxLimit":"9"}'],
  ['a deep object', JSON.stringify(JSON.parse('{"a":'.repeat(50) + '1' + '}'.repeat(50)))],
];
const writes = [...file.v2, ...file.v1].filter(
  (r: { method: string; gateway?: boolean }) => r.method !== 'GET' && !r.gateway && r.method !== 'DELETE',
);

const clock = new FakeClock();
let s: Stack;
let dns: DnsServer;
let n = 0;
beforeAll(async () => {
  dns = await startDnsServer({}); // live DNS checks get fast, deterministic answers
  s = await startStack({ clock, env: { DNS_RESOLVER: dns.address } });
});
afterAll(async () => {
  await s?.close();
  await dns?.close();
});

describe.each(writes.map((r: { method: string; path: string }) => [`${r.method} ${r.path}`, r]))('%s', (_name, r) => {
  it.each(BODIES)('with %s answers 4xx in its own envelope, never 5xx', async (_what, body) => {
    clock.advance(60_000); // a fresh window per request
    const v1 = r.path.startsWith('/v1/');
    const res = await s.request(r.method, concrete(r.path), {
      ...(v1
        ? { apiKey: K.partner }
        : { key: r.path.startsWith('/v2/workspaces/{') || r.path.includes('{workspaceId}') ? K.wsAdmin : K.ownerPk }),
      body,
      ip: `10.40.${Math.floor(++n / 250)}.${n % 250}`,
    });
    // The spec answers this one route 501 not_implemented, whatever the body.
    if (r.path === '/v1/email-accounts/oauth' && res.status === 501)
      expect(res.body.error_code).toBe('not_implemented');
    else expect(res.status, res.text).toBeLessThan(500);
    if (res.status >= 400) {
      if (v1)
        expect(res.body).toMatchObject({
          error_code: expect.any(String),
          message: expect.any(String),
          details: expect.any(Object),
        });
      else if (res.body?.error)
        expect(res.body.error).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      else expect(res.body).toMatchObject({ success: false, errorCode: expect.any(String) });
      expect(res.text).not.toMatch(/\n\s+at /); // no stack trace
    }
  });
});

const reads = [...file.v2, ...file.v1].filter(
  (r: { method: string; gateway?: boolean }) => r.method === 'GET' && !r.gateway,
);
const QUERIES = [
  'page=abc&per_page=-1&limit=x',
  'cursor=%00%FF&unreadOnly=2&limit=1e3',
  'maxLimitMin=1e9&maxLimitMax=-5&status=weird&tag=%27%3B--',
  'sort=nope&sortBy=sideways&from=2026-13-45&to=yesterday&tags=&search=' + 'x'.repeat(3000),
];

describe.each(reads.map((r: { method: string; path: string }) => [`GET ${r.path}`, r]))('%s', (_name, r) => {
  it.each(QUERIES.map((q, i) => [i + 1, q]))('with odd query %i answers without a 5xx', async (_i, query) => {
    clock.advance(60_000);
    const v1 = r.path.startsWith('/v1/');
    const res = await s.request('GET', `${concrete(r.path)}?${query}`, {
      ...(v1 ? { apiKey: K.partner } : { key: r.path.includes('{workspaceId}') ? K.wsAdmin : K.ownerPk }),
      ip: `10.41.${Math.floor(++n / 250)}.${n % 250}`,
    });
    expect(res.status, res.text).toBeLessThan(500);
    expect(res.text).not.toMatch(/\n\s+at /);
  });
});

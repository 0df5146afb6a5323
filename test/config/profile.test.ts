// The profile file (docs/profiles.md): each mistake is one line naming the file, the field and the fix;
// the shipped workspace profile is the workspace API's interfaces; a rest profile compiles into the
// interface, route table, problems and plans the gateway serves.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError } from '../../src/config/errors.js';
import { loadPlans } from '../../src/config/plans.js';
import { loadProfile, parseProfile } from '../../src/config/profile/load.js';
import { REFUSAL_NAMES } from '../../src/config/profile/refusals.js';
import { WORKSPACE_INTERFACES } from '../../src/config/profile/workspace.js';
import { loadRoutes } from '../../src/config/routes.js';

const SHOP = 'test/fixtures/profiles/shop.yaml';
const WORKSPACE = 'profiles/workspace.yaml';
const FILES = { ROUTES_FILE: 'config/routes.json', PLANS_FILE: 'config/plans.json' };
type Doc = any;
const shop = (): Doc => parse(readFileSync(SHOP, 'utf8'));
const workspace = (): Doc => parse(readFileSync(WORKSPACE, 'utf8'));

/** The line a profile's mistake stops the start with. */
function refusal(raw: unknown): string {
  try {
    parseProfile(raw, 'p.yaml', FILES);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the profile was accepted');
}

describe('a rest profile with a mistake', () => {
  it.each<[string, (f: Doc) => void, string]>([
    [
      'an unknown field',
      (f) => (f.routes[1].verb = 'GET'),
      'profile p.yaml: routes.1.verb: unknown field; remove it or use one of method, path, scope, bucket, gateway, limitMode, service, retry, timeouts',
    ],
    [
      'an unknown top-level field',
      (f) => (f.ratelimits = {}),
      'profile p.yaml: ratelimits: unknown field; remove it or use one of version, name, kind, prefix, key, scopes, plans, limits, services, routes, errors, identity',
    ],
    [
      "a plan field of the workspace API's plans",
      (f) => (f.plans.pro.maxWarmupPerAccount = 5),
      'profile p.yaml: plans.pro.maxWarmupPerAccount: unknown field; remove it or use one of read, write, bulk, limitMode, monthlyQuota, label',
    ],
    [
      'a route naming no service',
      (f) => (f.routes[2].service = 'billing'),
      'profile p.yaml: routes.2.service: no service billing; define it under "services" or name one of default, orders, catalog',
    ],
    [
      'a route scope not declared',
      (f) => (f.routes[1].scope = 'orders:delete'),
      'profile p.yaml: routes.1.scope: scope "orders:delete" is not declared under scopes, so no key can hold it; declare it under scopes or use one of orders:read, orders:write, catalog:read',
    ],
    [
      "a refusal's code another's default",
      (f) => (f.errors.refusals.rate_limited = { code: 'quota-exhausted' }),
      'profile p.yaml: errors.refusals.rate_limited.code: "quota-exhausted" is also the code of quota_exhausted; two refusals may not share a code, give rate_limited another',
    ],
    [
      "a refusal's code another's given one",
      (f) => (f.errors.refusals.rate_limited = { code: 'missing-scope' }),
      'profile p.yaml: errors.refusals.rate_limited.code: "missing-scope" is also the code of insufficient_scope; two refusals may not share a code, give rate_limited another',
    ],
    [
      'an unknown refusal',
      (f) => (f.errors.refusals.rate_limit = { status: 429 }),
      `profile p.yaml: errors.refusals.rate_limit: unknown refusal; the refusals are ${REFUSAL_NAMES.join(', ')} (docs/profiles.md, Refusals)`,
    ],
    [
      "a key prefix starting with another's",
      (f) => f.key.types.push({ name: 'partner', prefix: 'shop_live_' }),
      'profile p.yaml: key.types.1.prefix: "shop_live_" starts with "shop_", the prefix of key.types.0, so a key of one type would be read as the other; make neither prefix start the other',
    ],
    [
      "a key prefix that starts another's",
      (f) => f.key.types.unshift({ name: 'partner', prefix: 'shop_live_' }),
      'profile p.yaml: key.types.1.prefix: "shop_" starts "shop_live_", the prefix of key.types.0, so a key of one type would be read as the other; make neither prefix start the other',
    ],
    [
      'two key types of one name',
      (f) => f.key.types.push({ name: 'consumer', prefix: 'other_' }),
      'profile p.yaml: key.types.1.name: "consumer" is also the name of key.types.0; give each key type its own',
    ],
    [
      'a route outside the prefix',
      (f) => (f.routes[0].path = '/orders'),
      'profile p.yaml: routes.0.path: /orders is outside the prefix /api; start it with /api/ or change prefix',
    ],
    [
      'a route only sharing the prefix as text',
      (f) => (f.routes[0].path = '/apix/orders'),
      'profile p.yaml: routes.0.path: /apix/orders is outside the prefix /api; start it with /api/ or change prefix',
    ],
    [
      'two routes matching the same requests',
      (f) => f.routes.push({ ...f.routes[2], path: '/api/orders/{id}' }),
      'profile p.yaml: routes.5: GET /api/orders/{orderId} is routed twice (routes.2 matches the same requests); remove one',
    ],
    [
      'no free plan',
      (f) => delete f.plans.free,
      'profile p.yaml: plans.free: is required (a consumer whose plan is unknown gets it); add a plan named free',
    ],
    [
      'a relative typeBase',
      (f) => (f.errors.typeBase = 'shop.example/problems/'),
      'profile p.yaml: errors.typeBase: must be an absolute URI ending in / (https://shop.example/problems/)',
    ],
    [
      'a typeBase without its final /',
      (f) => (f.errors.typeBase = 'https://shop.example/problems'),
      "profile p.yaml: errors.typeBase: must end in / (https://shop.example/problems/): each refusal's type is it followed by its code",
    ],
    [
      'a scope declared twice',
      (f) => f.scopes.push('orders:read'),
      'profile p.yaml: scopes.3: scope "orders:read" is declared twice; remove one',
    ],
    [
      "a workspace API interface's name",
      (f) => (f.name = 'v2'),
      "profile p.yaml: name: v1 and v2 are the workspace API's interfaces; choose another name",
    ],
    ['an unknown kind', (f) => (f.kind = 'graphql'), 'profile p.yaml: kind: must be one of rest, workspace'],
    ['another version', (f) => (f.version = 2), 'profile p.yaml: version: must be 1'],
    [
      'a refusal answered with success',
      (f) => (f.errors.refusals.rate_limited = { status: 200 }),
      'profile p.yaml: errors.refusals.rate_limited.status: must be at least 400',
    ],
    [
      'a key header in capitals',
      (f) => (f.key.header = 'X-Api-Key'),
      'profile p.yaml: key.header: must be a header field name in lower case (authorization, x-api-key)',
    ],
    [
      "an unknown field of a service's",
      (f) => (f.services.orders.targetz = []),
      'profile p.yaml: services.orders.targetz: unknown field; remove it or use one of targets, balance, dns, stripPrefix, timeouts, preserveHost, retries, passive, probe',
    ],
  ])('%s', (_, mistake, line) => {
    const f = shop();
    mistake(f);
    expect(refusal(f)).toBe(line);
  });
});

describe('a workspace profile with a mistake', () => {
  it.each<[string, (f: Doc) => void, string]>([
    [
      "a fixed field of the contract's",
      (f) => (f.interfaces[0].prefix = '/api'),
      'profile p.yaml: interfaces.0.prefix: must be "/v2"',
    ],
    [
      "a prefix starting another interface's",
      (f) => (f.interfaces[1].key.types[0].prefix = 'svc_ws_v1_'),
      'profile p.yaml: interfaces.1.key.types.0.prefix: "svc_ws_v1_" starts with "svc_ws_", the prefix of interfaces.0.key.types.0, so a key of one type would be read as the other; make neither prefix start the other',
    ],
    [
      'a per-key limit on /v2',
      (f) => (f.interfaces[0].limits.key = 20),
      'profile p.yaml: interfaces.0.limits.key: unknown field; remove it or use one of address, headers',
    ],
    [
      'a rest field',
      (f) => (f.routes = []),
      'profile p.yaml: routes: unknown field; remove it or use one of version, name, kind, interfaces',
    ],
  ])('%s', (_, mistake, line) => {
    const f = workspace();
    mistake(f);
    expect(refusal(f)).toBe(line);
  });
});

describe('the profile file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kg-profile-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  const load = (file: string) => () => loadProfile({ PROFILE_FILE: file, ...FILES });

  it('is read as JSON by its extension, to the same profile as its YAML', () => {
    const json = write('shop.json', JSON.stringify(shop()));
    const a = loadProfile({ PROFILE_FILE: json, ...FILES });
    const b = loadProfile({ PROFILE_FILE: SHOP, ...FILES });
    expect(a.interfaces).toEqual(b.interfaces);
    expect(a.plans).toEqual(b.plans);
    expect(a.routes.tables.shop.all.map((r) => `${r.method} ${r.path}`)).toEqual(
      b.routes.tables.shop.all.map((r) => `${r.method} ${r.path}`),
    );
  });

  it('names its mistakes of syntax, name and presence in one line', () => {
    const file = (n: string) => join(dir, n);
    expect(load(write('bad.yaml', 'version: 1\nname: [shop\n'))).toThrow(
      new RegExp(`^profile ${file('bad.yaml')}: line \\d+, column \\d+: invalid YAML \\([^\\n]+\\)$`),
    );
    expect(load(write('twice.yaml', 'version: 1\nname: a\nname: b\n'))).toThrow(
      new RegExp(`^profile ${file('twice.yaml')}: line 3, column 1: invalid YAML \\(Map keys must be unique\\)$`),
    );
    expect(load(write('bad.json', '{"version": 1,'))).toThrow(
      `profile ${file('bad.json')}: invalid JSON at line 1, column 15`,
    );
    expect(load(write('shop.txt', 'version: 1'))).toThrow(
      `profile ${file('shop.txt')}: the file's name must end in .yaml, .yml or .json (its format)`,
    );
    expect(load(file('none.yaml'))).toThrow(
      `profile ${file('none.yaml')}: cannot read (no such file or directory); set PROFILE_FILE to a profile (docs/profiles.md)`,
    );
    expect(load(write('list.yaml', '- 1\n'))).toThrow(`profile ${file('list.yaml')}: (root): must be an object`);
  });
});

describe('the shipped workspace profile', () => {
  it("states exactly the workspace API's interfaces, over ROUTES_FILE and PLANS_FILE", () => {
    const p = loadProfile({ PROFILE_FILE: WORKSPACE, ...FILES });
    expect(p).toMatchObject({ name: 'workspace', kind: 'workspace', file: WORKSPACE });
    expect(p.interfaces).toStrictEqual([...WORKSPACE_INTERFACES]);
    expect(p.plans).toEqual(loadPlans(FILES.PLANS_FILE));
    const routes = loadRoutes(FILES.ROUTES_FILE);
    expect(Object.keys(p.routes.tables)).toEqual(['v2', 'v1']);
    expect(p.routes.v2.all.length).toBe(routes.v2.all.length);
    expect(p.routes.tables.v2).toBe(p.routes.v2);
    expect(p.routes.scopes).toEqual(routes.scopes);
  });

  it("refuses a routes file's mistake with the routes file's line", () => {
    expect(() => loadProfile({ PROFILE_FILE: WORKSPACE, ...FILES, ROUTES_FILE: 'config/none.json' })).toThrow(
      /^setting ROUTES_FILE: config\/none\.json: cannot read/,
    );
  });

  it('takes the secrets prefixes and limits the operator gives', () => {
    const f = workspace();
    f.interfaces[0].key.types[1].prefix = 'acme_pk_';
    f.interfaces[0].limits = { address: null, headers: ['ietf'] };
    f.interfaces[1].limits.key = 60;
    f.interfaces[1].identity = 'none';
    const [v2, v1] = parseProfile(f, 'p.yaml', FILES).interfaces;
    expect(v2.keyTypes[1]).toEqual({ name: 'personal', prefix: 'acme_pk_' });
    expect(v2.addressLimit).toBeNull();
    expect(v2.headers).toEqual({ xRateLimit: false, ietf: true });
    expect(v1.keyLimit).toBe(60);
    expect(v1.identity).toBe('none');
  });
});

describe('a good rest profile', () => {
  const p = loadProfile({ PROFILE_FILE: SHOP, ...FILES });

  it('is one interface of the consumer model under its name', () => {
    const { errors, ...spec } = p.interfaces[0];
    expect(p).toMatchObject({ name: 'shop', kind: 'rest', file: SHOP });
    expect(p.interfaces).toHaveLength(1);
    expect(spec).toStrictEqual({
      id: 'shop',
      prefix: '/api',
      model: 'consumer',
      key: { header: 'authorization', bearer: true },
      keyTypes: [{ name: 'consumer', prefix: 'shop_' }],
      addressLimit: 100,
      keyLimit: null,
      headers: { xRateLimit: true, ietf: true },
      identity: 'keygate',
    });
    expect(errors.format).toBe('problem');
  });

  it('answers every refusal: the file where it says, the defaults elsewhere', () => {
    const { errors } = p.interfaces[0];
    if (errors.format !== 'problem') throw new Error('not problem details');
    expect(Object.keys(errors.problems)).toEqual(REFUSAL_NAMES);
    expect(errors.problems.insufficient_scope).toEqual({
      status: 403,
      code: 'missing-scope',
      type: 'https://shop.example/problems/missing-scope',
      title: 'The key may not call this route.',
    });
    expect(errors.problems.rate_limited).toEqual({
      status: 429,
      code: 'rate-limited',
      type: 'https://shop.example/problems/rate-limited',
      title: 'Rate limit exceeded.',
    });
    expect(new Set(Object.values(errors.problems).map((x) => x.code)).size).toBe(REFUSAL_NAMES.length);
  });

  it('keeps a type the file gives whole, and its defaults where limits are left out', () => {
    const f = shop();
    f.errors.refusals.not_found = { type: 'about:blank' };
    delete f.limits;
    const [spec] = parseProfile(f, 'p.yaml', FILES).interfaces;
    expect(spec.addressLimit).toBe(100);
    expect(spec.headers).toEqual({ xRateLimit: true, ietf: true });
    if (spec.errors.format !== 'problem') throw new Error('not problem details');
    expect(spec.errors.problems.not_found).toMatchObject({ type: 'about:blank', code: 'not-found', status: 404 });
    f.limits = { address: null, headers: ['x-ratelimit'] };
    f.key.header = 'x-api-key';
    const [bare] = parseProfile(f, 'p.yaml', FILES).interfaces;
    expect(bare).toMatchObject({ addressLimit: null, key: { header: 'x-api-key', bearer: false } });
    expect(bare.headers).toEqual({ xRateLimit: true, ietf: false });
  });

  it("has the workspace API's plan shape, each label its name unless given", () => {
    expect(p.plans).toStrictEqual({
      free: {
        label: 'free',
        read: 60,
        write: 20,
        bulk: 5,
        maxWarmupPerAccount: null,
        warmingMailboxCap: null,
        entitlements: [],
      },
      pro: {
        label: 'Pro',
        read: 600,
        write: 200,
        bulk: 50,
        monthlyQuota: 1000000,
        maxWarmupPerAccount: null,
        warmingMailboxCap: null,
        entitlements: [],
      },
    });
  });

  it('routes under its name, with its scopes, services and no workspace routes', () => {
    const { routes } = p;
    expect(Object.keys(routes.tables)).toEqual(['shop']);
    expect(routes.v2.all).toEqual([]);
    expect(routes.v1.all).toEqual([]);
    expect(routes.scopes).toEqual({ 'orders:read': null, 'orders:write': null, 'catalog:read': null });
    expect([...routes.services.keys()]).toEqual(['default', 'orders', 'catalog']);
    const order = routes.tables.shop.match('GET', '/api/orders/12');
    expect(order?.params).toEqual({ orderId: '12' });
    expect(order?.route).toMatchObject({ scope: 'orders:read', minRole: null, bucket: 'read', gateway: false });
    expect(order?.route.service?.targets).toEqual([{ url: 'http://127.0.0.1:4101', weight: 1 }]);
    expect(routes.tables.shop.match('GET', '/api/products/sku-1')?.route.service?.name).toBe('catalog');
    expect(routes.tables.shop.match('POST', '/api/orders')?.route.bucket).toBe('write');
    expect(routes.tables.shop.match('GET', '/api/rate-limit')?.route).toMatchObject({ scope: null, gateway: true });
    expect(routes.tables.shop.match('DELETE', '/api/orders/12')).toBeNull();
  });
});

describe('docs/profiles.md', () => {
  const blocks = [...readFileSync('docs/profiles.md', 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) =>
    parse(m[1]),
  );

  it('shows a rest profile that loads, and the workspace profile as shipped', () => {
    const rest = blocks.find((b: Doc) => b.kind === 'rest');
    const ws = blocks.find((b: Doc) => b.kind === 'workspace');
    expect(parseProfile(rest, 'docs', FILES).interfaces[0].id).toBe('shop');
    expect(parseProfile(ws, 'docs', FILES).interfaces).toStrictEqual([...WORKSPACE_INTERFACES]);
  });
});

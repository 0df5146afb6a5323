// The services section of ROUTES_FILE: routes name services, the default stays the upstream, every
// mistake is one line naming the field.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseRoutes } from '../../src/config/routes.js';
import { DEFAULT_SERVICE, sameService, stripPrefix, withUpstream } from '../../src/config/services.js';

const base = JSON.parse(readFileSync('config/routes.json', 'utf8')) as {
  v2: Record<string, unknown>[];
  v1: Record<string, unknown>[];
  [k: string]: unknown;
};
const withServices = (services: unknown, edit: (f: typeof base) => void = () => {}) => {
  const f = structuredClone(base);
  f.services = services;
  edit(f);
  return f;
};

describe('services in the routes file', () => {
  it("leaves today's file unchanged: every route goes to the implicit default service", () => {
    const r = parseRoutes(base);
    const route = r.v2.match('GET', '/v2/workspaces/5/accounts')!.route;
    expect(route.service!.name).toBe(DEFAULT_SERVICE);
    expect(route.service!.implicit).toBe(true);
    expect(route.forwarding).toEqual({ retry: true, timeouts: {} });
    expect([...r.services.keys()]).toEqual([DEFAULT_SERVICE]);
    expect(withUpstream(route.service!, 'http://127.0.0.1:9').targets).toEqual([
      { url: 'http://127.0.0.1:9', weight: 1 },
    ]);
  });

  it("gives a route the service it names, with its settings and the route's own", () => {
    const f = withServices(
      {
        analytics: {
          targets: ['http://10.0.0.1:9000/api', { url: 'http://analytics.svc:9000', weight: 3 }],
          balance: 'round-robin',
          stripPrefix: '/v2',
          retries: { attempts: 1 },
        },
      },
      (f) => {
        const r = f.v2.find((x) => String(x.path).endsWith('/stats'))!;
        Object.assign(r, { service: 'analytics', retry: false, timeouts: { headMs: 2000 } });
      },
    );
    const r = parseRoutes(f);
    const route = r.v2.all.find((x) => x.path.endsWith('/stats'))!;
    expect(route.service!.name).toBe('analytics');
    expect(route.service!.targets).toEqual([
      { url: 'http://10.0.0.1:9000/api', weight: 1 },
      { url: 'http://analytics.svc:9000', weight: 3 },
    ]);
    expect(route.service!.balance).toBe('round-robin');
    expect(route.service!.retries).toEqual({ attempts: 1, budgetPercent: 50, minConcurrent: 3 });
    expect(route.service!.passive.consecutiveFailures).toBe(5);
    expect(route.forwarding).toEqual({ retry: false, timeouts: { headMs: 2000 } });
    // Routes of one service share its object: what the registry keys its upstream on.
    const other = r.v2.all.find((x) => x.service?.name === 'analytics' && x !== route);
    if (other) expect(other.service).toBe(route.service);
  });

  it.each([
    [
      'a route naming no service',
      withServices(undefined, (f) => Object.assign(f.v2[0], { service: 'billing' })),
      /routes v2\.0\.service: no service billing; define it under "services" or name one of default/,
    ],
    [
      'an unknown setting',
      withServices({ a: { targets: ['http://x:1'], retry: 2 } }),
      /routes services\.a\.retry: unknown field/,
    ],
    ['no target', withServices({ a: { targets: [] } }), /routes services\.a\.targets:/],
    ['a target that is not http', withServices({ a: { targets: ['ftp://x:1'] } }), /routes services\.a\.targets\.0:/],
    ['a bad name', withServices({ 'A b': { targets: ['http://x:1'] } }), /routes services\.A b:.*a service name/],
    [
      'a prefix ending in /',
      withServices({ a: { targets: ['http://x:1'], stripPrefix: '/v2/' } }),
      /services\.a\.stripPrefix/,
    ],
    [
      'a route timeout of zero',
      withServices(undefined, (f) => Object.assign(f.v1[0], { timeouts: { headMs: 0 } })),
      /v1\.0\.timeouts\.headMs/,
    ],
  ])('refuses %s with one line naming the field', (_what, file, message) => {
    expect(() => parseRoutes(file)).toThrowError(message);
  });

  it('a defined default service replaces the upstream', () => {
    const r = parseRoutes(withServices({ default: { targets: ['http://10.0.0.9:8081'] } }));
    const s = r.v2.all[0].service!;
    expect(s.implicit).toBeUndefined();
    expect(withUpstream(s, 'http://127.0.0.1:1').targets[0].url).toBe('http://10.0.0.9:8081');
  });

  it('tells an unchanged service from a changed one across two parses', () => {
    const a = parseRoutes(withServices({ x: { targets: ['http://10.0.0.1:1'] } })).services.get('x')!;
    const b = parseRoutes(withServices({ x: { targets: ['http://10.0.0.1:1'] } })).services.get('x')!;
    const c = parseRoutes(withServices({ x: { targets: ['http://10.0.0.2:1'] } })).services.get('x')!;
    expect(a).not.toBe(b);
    expect(sameService(a, b)).toBe(true);
    expect(sameService(a, c)).toBe(false);
  });
});

describe('stripPrefix', () => {
  it.each([
    ['/v2/workspaces/1/x?q=1', '/v2', '/workspaces/1/x?q=1'],
    ['/v2', '/v2', '/'],
    ['/v2?q', '/v2', '/?q'],
    ['/v2x/y', '/v2', '/v2x/y'],
    ['/v1/a', '/v2', '/v1/a'],
    ['/legacy/api/a', '/legacy/api', '/a'],
  ])('%s less %s is %s', (target, prefix, out) => {
    expect(stripPrefix(target, prefix)).toBe(out);
  });
});

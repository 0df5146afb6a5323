// config/routes.json: every route the gateway forwards, with its scope and bucket. A request whose
// method and path match no entry is never forwarded (docs/decisions.md section 3, step 7).
import { z } from 'zod';
import { ConfigError, formatZodIssue } from './errors.js';
import { readJson } from './plans.js';
import { LRUCache } from 'lru-cache';
import { CANONICAL_ID, STRING_ID } from './contract.js';
import {
  DEFAULT_SERVICE,
  implicitDefaultService,
  serviceConfig,
  servicesSchema,
  type RouteForwarding,
  type ServiceConfig,
} from './services.js';

export const ROLES = ['VIEWER', 'EDITOR', 'ADMIN', 'OWNER'] as const;
export type Role = (typeof ROLES)[number];
export type MinRole = Role | 'ORG_OWNER';
export type Bucket = 'read' | 'write' | 'bulk';

export const method = z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** Where a route goes and how (src/config/services.ts): every field optional, today's routes unchanged. */
const forwarding = {
  service: z.string().optional(),
  retry: z.boolean().optional(),
  timeouts: z
    .object({
      connectMs: z.number().int().positive().optional(),
      headMs: z.number().int().positive().optional(),
      idleMs: z.number().int().positive().optional(),
    })
    .strict()
    .optional(),
};
export const pathPattern = z
  .string()
  .regex(/^(\/([a-z0-9-]+|\{[A-Za-z]+(:str)?\}))+$/, 'must be /-separated literals or {param} / {param:str}');

export const bucket = z.enum(['read', 'write', 'bulk']);
/** What any route entry may add to its method, path, scope and bucket. */
export const routeOptions = {
  gateway: z.literal(true).optional(),
  limitMode: z.enum(['enforce', 'shadow']).optional(),
  ...forwarding,
};

const v2Route = z
  .object({
    method,
    path: pathPattern.refine((p) => p.startsWith('/v2/'), 'must start with /v2/'),
    scope: z
      .string()
      .regex(/^[a-z]+:[a-z]+$/)
      .nullable(),
    bucket,
    ...routeOptions,
  })
  .strict();
const v1Route = z
  .object({
    method,
    path: pathPattern.refine((p) => p.startsWith('/v1/'), 'must start with /v1/'),
    ...routeOptions,
  })
  .strict();

/** Why a route's service is not one of the file's, or null when it is (`default` always is). */
export function unknownService(
  service: string | undefined,
  services: Record<string, unknown> | undefined,
): string | null {
  if (service === undefined || service === DEFAULT_SERVICE || (services && Object.hasOwn(services, service)))
    return null;
  const known = ['default', ...Object.keys(services ?? {}).filter((n) => n !== DEFAULT_SERVICE)];
  return `no service ${service}; define it under "services" or name one of ${known.join(', ')}`;
}

/** A route's method and path with its parameters' names erased: two routes of one shape match the same requests. */
export function routeShape(method: string, path: string): string {
  return `${method} ${path.replace(/\{[^}]+\}/g, (m) => (m.endsWith(':str}') ? '{s}' : '{n}'))}`;
}

export const routesFileSchema = z
  .object({
    scopes: z.record(z.string().regex(/^[a-z]+:[a-z]+$/), z.enum([...ROLES, 'ORG_OWNER'])),
    services: servicesSchema.optional(),
    v2: z.array(v2Route).min(1),
    v1: z.array(v1Route).min(1),
  })
  .strict()
  .superRefine((f, ctx) => {
    f.v2.forEach((r, i) => {
      if (r.scope !== null && !(r.scope in f.scopes)) {
        ctx.addIssue({ code: 'custom', path: ['v2', i, 'scope'], message: `unknown scope ${r.scope}` });
      }
    });
    for (const api of ['v1', 'v2'] as const) {
      const seen = new Set<string>();
      f[api].forEach((r, i) => {
        const unknown = unknownService(r.service, f.services);
        if (unknown) ctx.addIssue({ code: 'custom', path: [api, i, 'service'], message: unknown });
        const k = routeShape(r.method, r.path);
        if (seen.has(k))
          ctx.addIssue({ code: 'custom', path: [api, i, 'path'], message: `duplicate route ${r.method} ${r.path}` });
        seen.add(k);
      });
    }
  });
export type RoutesFile = z.infer<typeof routesFileSchema>;

export interface RouteDef {
  method: string;
  path: string;
  scope: string | null;
  minRole: MinRole | null;
  bucket: Bucket;
  gateway: boolean;
  /** Limits of this route in `shadow` or `enforce`, over the plan's and RATE_LIMIT_MODE (src/gateway/shadow.ts). */
  limitMode?: 'enforce' | 'shadow';
  /** Names of the path parameters, in order. */
  params: string[];
  /** The service it goes to: an object of this configuration (a reload makes new ones); absent, the default. */
  service?: ServiceConfig;
  /** Absent: retries allowed, the service's timeouts. */
  forwarding?: RouteForwarding;
}

export interface RouteMatch {
  route: RouteDef;
  params: Record<string, string>;
}

interface Node {
  literal: Map<string, Node>;
  num?: Node;
  str?: Node;
  numName?: string;
  strName?: string;
  routes: Map<string, RouteDef>;
}
const node = (): Node => ({ literal: new Map(), routes: new Map() });

/** A segment trie: literals first, then a numeric id, then a string id. */
export class RouteTable {
  readonly all: RouteDef[] = [];
  private root = node();

  add(def: RouteDef): void {
    this.memo.clear();
    let n = this.root;
    for (const seg of def.path.split('/').slice(1)) {
      const m = /^\{([A-Za-z]+)(:str)?\}$/.exec(seg);
      if (!m) {
        let next = n.literal.get(seg);
        if (!next) n.literal.set(seg, (next = node()));
        n = next;
      } else if (m[2]) {
        n = n.str ??= node();
        n.strName = m[1];
      } else {
        n = n.num ??= node();
        n.numName = m[1];
      }
    }
    n.routes.set(def.method, def);
    this.all.push(def);
  }

  /** Answers of match(), remembered per method and path: clients repeat their paths. */
  private memo = new LRUCache<string, RouteMatch | false>({ max: 10_000 });

  /**
   * Match a canonical path (no query). HEAD matches the GET route. The match is shared by every
   * request for the same method and path: callers must not modify it.
   */
  match(method: string, path: string): RouteMatch | null {
    const key = method + ' ' + path;
    let match = this.memo.get(key);
    if (match === undefined) this.memo.set(key, (match = this.walkMatch(method, path) ?? false));
    return match || null;
  }

  private walkMatch(method: string, path: string): RouteMatch | null {
    const m = method === 'HEAD' ? 'GET' : method;
    const params: Record<string, string> = {};
    const segs = path.split('/');
    const walk = (n: Node, i: number): RouteDef | null => {
      if (i === segs.length) return n.routes.get(m) ?? null;
      const seg = segs[i];
      const lit = n.literal.get(seg);
      if (lit) {
        const r = walk(lit, i + 1);
        if (r) return r;
      }
      if (n.num && CANONICAL_ID.test(seg)) {
        const r = walk(n.num, i + 1);
        if (r) {
          params[n.num.numName!] = seg;
          return r;
        }
      }
      if (n.str && STRING_ID.test(seg)) {
        const r = walk(n.str, i + 1);
        if (r) {
          params[n.str.strName!] = seg;
          return r;
        }
      }
      return null;
    };
    if (segs[0] !== '') return null;
    const route = walk(this.root, 1);
    return route ? Object.freeze({ route, params: Object.freeze(params) }) : null;
  }

  /** True when some method is routed at this path (used to tell 404 from 405-like misses). */
  has(path: string): boolean {
    return ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].some((m) => this.match(m, path) !== null);
  }
}

export interface Routes {
  /** The route table of each interface of the profile in force, by its id (`v2`, `v1`, a profile's name). */
  tables: Readonly<Record<string, RouteTable>>;
  /** The workspace API's tables (empty under another profile). */
  v2: RouteTable;
  v1: RouteTable;
  /** Every scope a key may hold, and the least role holding it; null where the profile has no roles (a rest profile). */
  scopes: Record<string, MinRole | null>;
  /** Every service of this configuration, `default` included. */
  services: Map<string, ServiceConfig>;
}

export function parseRoutes(raw: unknown, source = 'routes'): Routes {
  const r = routesFileSchema.safeParse(raw);
  if (!r.success) throw new ConfigError(formatZodIssue(source, r.error.issues[0], raw));
  const f = r.data;
  const services = serviceMap(f.services);
  const where = (d: RoutesFile['v1'][number]) => routeForwarding(d, services);
  const v2 = new RouteTable();
  const v1 = new RouteTable();
  for (const d of f.v2) {
    v2.add({
      method: d.method,
      path: d.path,
      scope: d.scope,
      minRole: d.scope ? f.scopes[d.scope] : null,
      bucket: d.bucket,
      ...where(d),
    });
  }
  for (const d of f.v1)
    v1.add({ method: d.method, path: d.path, scope: null, minRole: null, bucket: 'read', ...where(d) });
  return { tables: { v2, v1 }, v2, v1, scopes: f.scopes, services };
}

/** The services of a file by name, with the implicit `default` unless the file defines it. */
export function serviceMap(defined: RoutesFile['services']): Map<string, ServiceConfig> {
  const services = new Map<string, ServiceConfig>([[DEFAULT_SERVICE, implicitDefaultService()]]);
  for (const [name, raw] of Object.entries(defined ?? {})) services.set(name, serviceConfig(name, raw));
  return services;
}

/** What a route entry of a file says beyond its method, path, scope and bucket. */
export function routeForwarding(
  d: Pick<RoutesFile['v1'][number], 'path' | 'gateway' | 'limitMode' | 'service' | 'retry' | 'timeouts'>,
  services: Map<string, ServiceConfig>,
): Pick<RouteDef, 'gateway' | 'limitMode' | 'params' | 'service' | 'forwarding'> {
  return {
    gateway: d.gateway === true,
    limitMode: d.limitMode,
    params: [...d.path.matchAll(/\{([A-Za-z]+)(?::str)?\}/g)].map((x) => x[1]),
    service: services.get(d.service ?? DEFAULT_SERVICE)!,
    forwarding: { retry: d.retry !== false, timeouts: d.timeouts ?? {} },
  };
}

export function loadRoutes(file: string): Routes {
  return parseRoutes(readJson(file, 'ROUTES_FILE'), file);
}

// The backend's router: handlers are small async functions of a context that return a reply or
// throw an ApiError / ApiErrorA / V1Error; the envelope is chosen by the interface (CONTRACT 5-7).
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { RouteTable } from '../config/routes.js';
import type { Identity } from '../http/identity.js';
import { ApiError, V1Error } from '../http/errors.js';
import type { Db } from '../db/index.js';
import type { BackendServices } from './services.js';
import { PG_INT_MAX, unstorableTextAt } from './validation.js';

export type Envelope = 'B' | 'A' | 'v1' | 'raw';

export interface Ctx {
  req: IncomingMessage;
  method: string;
  path: string;
  query: URLSearchParams;
  params: Record<string, string>;
  /** The gateway's signed identity (/v1 and /v2 only; null on /api-keys and /internal). */
  identity: Identity | null;
  requestId: string;
  /** The backend's logger bound to this request's `requestId` (also `svc.log` of this context's `svc`). */
  log: Logger;
  /** The parsed JSON body, or undefined when none was sent. */
  body: unknown;
  db: Db;
  svc: BackendServices;
}

export interface Reply {
  status?: number;
  data?: unknown;
  /** Envelope B page lists: page, per_page, total, total_pages, has_more. */
  pagination?: { page: number; per_page: number; total: number; total_pages: number; has_more: boolean };
  /** Extra fields merged into Envelope B's meta (e.g. a notifications next cursor). */
  meta?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** Overrides the route's envelope (e.g. the tag list answers in Envelope A). */
  envelope?: Envelope;
  /** A non-JSON body (CSV export). */
  raw?: { contentType: string; body: string };
}

export type Handler = (ctx: Ctx) => Promise<Reply>;

export interface RouteOptions {
  envelope?: Envelope;
}

export class Router {
  private table = new RouteTable();
  private handlers = new Map<string, { handler: Handler; envelope: Envelope }>();

  constructor(private defaultEnvelope: (path: string) => Envelope) {}

  on(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, handler: Handler, opts: RouteOptions = {}): this {
    const k = `${method} ${path}`;
    if (this.handlers.has(k)) throw new Error(`duplicate backend route ${k}`);
    const params = [...path.matchAll(/\{([A-Za-z]+)(?::str)?\}/g)].map((x) => x[1]);
    this.table.add({ method, path, scope: null, minRole: null, bucket: 'read', gateway: false, params });
    this.handlers.set(k, { handler, envelope: opts.envelope ?? this.defaultEnvelope(path) });
    return this;
  }

  get(path: string, h: Handler, o?: RouteOptions) { return this.on('GET', path, h, o); }
  post(path: string, h: Handler, o?: RouteOptions) { return this.on('POST', path, h, o); }
  put(path: string, h: Handler, o?: RouteOptions) { return this.on('PUT', path, h, o); }
  patch(path: string, h: Handler, o?: RouteOptions) { return this.on('PATCH', path, h, o); }
  delete(path: string, h: Handler, o?: RouteOptions) { return this.on('DELETE', path, h, o); }

  match(method: string, path: string) {
    const m = this.table.match(method, path);
    if (!m) return null;
    const h = this.handlers.get(`${m.route.method} ${m.route.path}`)!;
    return { ...h, params: m.params, pattern: m.route.path };
  }

  /** Every registered `METHOD path`, for tests that compare with config/routes.json. */
  routes(): string[] {
    return [...this.handlers.keys()];
  }

  hasPath(path: string): boolean {
    return this.table.has(path);
  }
}

/**
 * Validate a body (or query object) with a strict zod schema. On failure: 400 invalid_request whose
 * details name the field (`details.field`) and every issue. /v1 routes get the v1 shape.
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown, api: 'v2' | 'v1' = 'v2'): z.infer<S> {
  // Before the schema: no string PostgreSQL cannot store passes, whatever field holds it.
  const bad = unstorableTextAt(value);
  if (bad) {
    const field = bad.field || '(body)';
    const message = `${field}: ${bad.inName ? 'field name' : 'text'} must not contain NUL characters or unpaired UTF-16 surrogates`;
    const details = { field, issues: [{ field, message }] };
    if (api === 'v1') throw new V1Error('invalid_request', message, details);
    throw new ApiError('invalid_request', message, details);
  }
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => {
    let path = i.path.map(String).join('.');
    if (i.code === 'unrecognized_keys') path = [path, ...(i as { keys: string[] }).keys.slice(0, 1)].filter(Boolean).join('.');
    return { field: path || '(body)', message: i.code === 'unrecognized_keys' ? 'unknown field' : i.message };
  });
  const first = issues[0];
  const message = `${first.field}: ${first.message}`;
  if (api === 'v1') throw new V1Error('invalid_request', message, { field: first.field, issues });
  throw new ApiError('invalid_request', message, { field: first.field, issues });
}

/** Path parameters are canonical decimal ids by the time they arrive (the gateway checked them). */
export function idParam(ctx: Ctx, name: string): number {
  const raw = ctx.params[name];
  if (!/^[1-9][0-9]*$/.test(raw)) {
    if (ctx.path.startsWith('/v1/')) throw new V1Error('invalid_request', `${name} must be a positive integer`, { field: name });
    throw new ApiError('invalid_request', `${name} must be a positive integer`, { field: name });
  }
  // Ids are PostgreSQL integers: a canonical id beyond them, however long, names nothing (never a 500
  // from the driver).
  if (raw.length > 10 || Number(raw) > MAX_ID) {
    const details = { [name]: Number.isSafeInteger(Number(raw)) ? Number(raw) : raw };
    if (ctx.path.startsWith('/v1/')) throw new V1Error('not_found', `No resource with ${name} ${raw}.`, details);
    throw new ApiError('not_found', `No resource with ${name} ${raw}.`, details);
  }
  return Number(raw);
}

export const MAX_ID = PG_INT_MAX;

/** Query parameters as a plain object (repeated keys become arrays), for zod. */
export function queryObject(q: URLSearchParams, arrays: string[] = []): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const k of new Set(q.keys())) {
    const all = q.getAll(k);
    out[k] = arrays.includes(k) ? all : all[all.length - 1];
  }
  return out;
}

/** Envelope B pagination from page, per_page and total. */
export function pagination(page: number, perPage: number, total: number) {
  const totalPages = Math.max(1, Math.ceil(total / perPage));
  return { page, per_page: perPage, total, total_pages: totalPages, has_more: page < totalPages };
}

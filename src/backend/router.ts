// The backend's router: handlers are small async functions of a context that return a reply or
// throw an ApiError; the server writes the error in the route's envelope (docs/decisions.md sections 5-7).
// Matching is the shared route table's (src/http/router.ts); this file keeps the route syntax the domains
// register with.
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Identity } from '../http/identity.js';
import { ApiError } from '../http/errors.js';
import { RouteTable, type Method, type RouteMatch } from '../http/router.js';
import type { Db } from '../db/index.js';
import type { BackendServices } from './services.js';
import { unstorableTextAt } from '../db/storable.js';
import { CANONICAL_ID_SOURCE, PG_INT_MAX, STRING_ID_SOURCE } from '../config/contract.js';

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

interface RouteEntry {
  handler: Handler;
  envelope: Envelope;
  /** The registered path, e.g. `/v2/workspaces/{workspaceId}/tags`. */
  pattern: string;
}

// The segments the gateway lets through (docs/decisions.md section 3, step 1): an id is canonical decimal;
// a `{name:str}` parameter is a short token. A segment that fits neither names no route (404).
const paramSource = (kind: string | undefined) => (kind === 'str' ? STRING_ID_SOURCE : CANONICAL_ID_SOURCE);

export class Router {
  // Paths arrive canonical (the gateway checked them; /api-keys and /internal are called as written).
  private table = new RouteTable<RouteEntry>(paramSource);

  constructor(private defaultEnvelope: (path: string) => Envelope) {}

  on(method: Method, path: string, handler: Handler, options: RouteOptions = {}): this {
    const entry: RouteEntry = { handler, envelope: options.envelope ?? this.defaultEnvelope(path), pattern: path };
    if (!this.table.add(method, path, entry)) throw new Error(`duplicate backend route ${method} ${path}`);
    return this;
  }

  get(path: string, handler: Handler, options?: RouteOptions) {
    return this.on('GET', path, handler, options);
  }
  post(path: string, handler: Handler, options?: RouteOptions) {
    return this.on('POST', path, handler, options);
  }
  put(path: string, handler: Handler, options?: RouteOptions) {
    return this.on('PUT', path, handler, options);
  }
  patch(path: string, handler: Handler, options?: RouteOptions) {
    return this.on('PATCH', path, handler, options);
  }
  delete(path: string, handler: Handler, options?: RouteOptions) {
    return this.on('DELETE', path, handler, options);
  }

  /** The route of a canonical path (no query string); HEAD is answered by the GET route. */
  match(method: string, path: string): (RouteEntry & { params: Record<string, string> }) | null {
    const found = this.table.find(method, path);
    return found && { ...found.route, params: found.params };
  }

  /** The route, or which miss it is (404, or 405 when another method has the path). */
  resolve(method: string, path: string): RouteMatch<RouteEntry> {
    return this.table.match(method, path);
  }

  /** Every registered `METHOD path`, for tests that compare with config/routes.json. */
  routes(): string[] {
    return this.table.keys();
  }

  /** True when some method is routed at this path: a miss is then 405, not 404. */
  hasPath(path: string): boolean {
    return this.table.match('GET', path).kind !== 'not_found';
  }
}

/**
 * Validate a body (or query object) with a strict zod schema. On failure: 400 invalid_request whose
 * details name the field (`details.field`) and every issue, in the route's envelope.
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  // Before the schema: no string PostgreSQL cannot store passes, whatever field holds it.
  const unstorable = unstorableTextAt(value);
  if (unstorable) {
    const field = unstorable.field || '(body)';
    const message = `${field}: ${unstorable.inName ? 'field name' : 'text'} must not contain NUL characters or unpaired UTF-16 surrogates`;
    throw new ApiError('invalid_request', message, { field, issues: [{ field, message }] });
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => {
    let path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys')
      path = [path, ...(issue as { keys: string[] }).keys.slice(0, 1)].filter(Boolean).join('.');
    return { field: path || '(body)', message: issue.code === 'unrecognized_keys' ? 'unknown field' : issue.message };
  });
  const first = issues[0];
  throw new ApiError('invalid_request', `${first.field}: ${first.message}`, { field: first.field, issues });
}

/** Path parameters are canonical decimal ids by the time they arrive (the gateway checked them). */
export function idParam(ctx: Ctx, name: string): number {
  const raw = ctx.params[name];
  if (!/^[1-9][0-9]*$/.test(raw))
    throw new ApiError('invalid_request', `${name} must be a positive integer`, { field: name });
  // Ids are PostgreSQL integers: a canonical id beyond them, however long, names nothing (never a 500
  // from the driver).
  if (raw.length > 10 || Number(raw) > PG_INT_MAX) {
    throw new ApiError('not_found', `No resource with ${name} ${raw}.`, {
      [name]: Number.isSafeInteger(Number(raw)) ? Number(raw) : raw,
    });
  }
  return Number(raw);
}

/** Query parameters as a plain object (repeated keys become arrays), for zod. */
export function queryObject(query: URLSearchParams, arrays: string[] = []): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name of new Set(query.keys())) {
    const values = query.getAll(name);
    out[name] = arrays.includes(name) ? values : values[values.length - 1];
  }
  return out;
}

/** Envelope B pagination from page, per_page and total. */
export function pagination(page: number, perPage: number, total: number) {
  const totalPages = Math.max(1, Math.ceil(total / perPage));
  return { page, per_page: perPage, total, total_pages: totalPages, has_more: page < totalPages };
}

// What every table of admin API operations is made of (./routes.ts and the tables beside it): the
// operation's shape, and the parsing and answering helpers they share.
import type { z } from 'zod';
import type { AuthenticatedToken } from '../access/service/admin-tokens.js';
import { ServiceError, type ServiceContext } from '../access/service/context.js';
import { AdminApiError } from './errors.js';
import type { AdminApiDeps } from './deps.js';
import { DB_ID_SOURCE, isDbId, PG_INT_MAX } from '../config/contract.js';

export interface Call {
  deps: AdminApiDeps;
  /** The service layer's context for this request: the token as the actor, the request id. */
  ctx: ServiceContext;
  token: AuthenticatedToken;
  params: Record<string, number>;
  query: URLSearchParams;
  body: unknown;
  requestId: string;
}

export interface QueryParam {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

export interface AdminRoute {
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  role: 'read' | 'write';
  summary: string;
  query?: QueryParam[];
  body?: z.ZodType;
  status: 200 | 201;
  response: z.ZodType;
  /** The media types a StreamedAnswer is written in, each with its schema (the document's); else JSON. */
  produces?: Record<string, z.ZodType>;
  handle(call: Call): Promise<unknown>;
}

/**
 * An answer that is not one JSON document (the billing export): its headers, then its body written a
 * piece at a time as it is read, so a long answer never sits in memory whole.
 */
export class StreamedAnswer {
  constructor(
    readonly headers: Record<string, string>,
    readonly body: AsyncIterable<string>,
  ) {}
}

export const ID_QUERY = { type: 'string', pattern: DB_ID_SOURCE };
export const PAGE: QueryParam[] = [
  {
    name: 'limit',
    description: 'Items per page, 1 to 200 (default 50).',
    schema: { type: 'string', pattern: '^[1-9][0-9]{0,2}$' },
  },
  {
    name: 'cursor',
    description: 'The `nextCursor` of the previous page.',
    schema: { type: 'string', pattern: '^[0-9]{1,10}$' },
  },
];

export function idQuery(q: URLSearchParams, name: string): number | undefined {
  const raw = q.get(name);
  if (raw === null || raw === '') return undefined;
  if (!isDbId(raw)) throw new AdminApiError('invalid_request', `${name} must be a positive integer id`);
  return Number(raw);
}

export function paging(q: URLSearchParams): { limit: number; after: number } {
  const rawLimit = q.get('limit');
  const limit = rawLimit === null ? 50 : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200)
    throw new AdminApiError('invalid_request', 'limit must be an integer from 1 to 200');
  const rawCursor = q.get('cursor');
  // A cursor is an id this API gave: within PostgreSQL's integer, as the column it is compared with.
  const after = rawCursor === null || rawCursor === '' ? 0 : Number(rawCursor);
  if (!/^[0-9]{1,10}$/.test(rawCursor || '0') || after > PG_INT_MAX)
    throw new AdminApiError('invalid_request', 'cursor is not one this API gave');
  return { limit, after };
}

/** Rows fetched one past the page: the extra row says there is a next page. */
export function pageOf<T extends { id: number }>(rows: T[], limit: number) {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? String(items[items.length - 1].id) : null };
}

/** The service layer's refusals in this API's shape. */
export async function service<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof ServiceError) {
      // A change the rules refuse as asked (a role above its creator's, a workspace the user is not in)
      // is an input problem for an operator's token: 400, not the 403 of a read token on a write.
      const code = err.kind === 'not_found' ? 'not_found' : err.kind === 'conflict' ? 'conflict' : 'invalid_request';
      throw new AdminApiError(code, err.message);
    }
    throw err;
  }
}

export function oneOfQuery<T extends string>(q: URLSearchParams, name: string, allowed: readonly T[]): T | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!(allowed as readonly string[]).includes(v))
    throw new AdminApiError('invalid_request', `${name} must be one of ${allowed.join(', ')}`);
  return v as T;
}

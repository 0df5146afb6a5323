// The admin API listener (ADMIN_API_PORT): /api/* for admin tokens, the OpenAPI document at /api, and
// the console's static files at /. Every /api operation needs a bearer admin token (./auth.ts); a read
// token may only read. Routes are matched by the route table the backend uses (src/http/router.ts);
// every refusal is an AdminApiError, written here in this API's one shape.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { clientIp } from '../http/client-ip.js';
import { readBody, jsonOf } from '../http/body.js';
import { RouteTable } from '../http/router.js';
import { DB_ID_SOURCE, PG_INT_MAX } from '../config/contract.js';
import type { AuthenticatedToken } from '../access/service/admin-tokens.js';
import { AdminApiError, errorBody, type AdminErrorCode } from './errors.js';
import { ROUTES } from './routes.js';
import { StreamedAnswer, type AdminRoute } from './route-kit.js';
import { adminOpenApi } from './openapi.js';
import { authenticate } from './auth.js';
import { serviceContexts, type AdminApiDeps } from './deps.js';

const BODY_MAX = 64 * 1024;
const API_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

const table = new RouteTable<AdminRoute>(() => DB_ID_SOURCE);
for (const route of ROUTES) table.add(route.method, route.path, route);

function send(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string | number> = {},
  head = false,
) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...API_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(head ? undefined : text);
}

/** Once the client took what was written, or went away. */
function drained(res: http.ServerResponse): Promise<void> {
  return new Promise((go) => {
    const done = () => (res.off('drain', done), res.off('close', done), go());
    res.on('drain', done).on('close', done);
  });
}

/**
 * A streamed answer: its first piece is read before the head is written, so a failure there is still
 * an answer in this API's shape; a later one cuts the connection (sendFailure), and a client gone
 * stops the reading.
 */
async function streamAnswer(res: http.ServerResponse, status: number, a: StreamedAnswer, head: boolean) {
  const pieces = a.body[Symbol.asyncIterator]();
  let next = head ? { done: true as const, value: undefined } : await pieces.next();
  res.writeHead(status, { ...API_HEADERS, ...a.headers });
  try {
    for (; !next.done && !res.destroyed; next = await pieces.next()) if (!res.write(next.value)) await drained(res);
  } finally {
    if (!next.done) await pieces.return?.();
  }
  res.end();
}

/** A failure in this API's shape: its own refusals as thrown, a store that did not answer 503, else 500. */
function sendFailure(deps: AdminApiDeps, res: http.ServerResponse, err: unknown, path: string, requestId: string) {
  if (res.headersSent) return void res.destroy();
  if (err instanceof AdminApiError) {
    const headers: Record<string, string | number> = {};
    if (err.code === 'unauthorized') headers['www-authenticate'] = 'Bearer realm="keygate-admin"';
    if (err.retryAfter !== undefined) headers['retry-after'] = err.retryAfter;
    return send(res, err.status, errorBody(err.code, err.message, requestId), headers);
  }
  // Logged without the request's headers (they hold the token).
  const code: AdminErrorCode = /timeout|ECONNREFUSED|connect|terminat/i.test(String((err as Error)?.message))
    ? 'service_unavailable'
    : 'internal';
  deps.log.error({ err: (err as Error)?.message, path, requestId }, 'admin api request failed');
  const message = code === 'internal' ? 'internal error' : 'a store did not answer; try again';
  send(res, code === 'internal' ? 500 : 503, errorBody(code, message, requestId));
}

/** The route's body, checked by its schema; a route without one reads none. */
async function bodyOf(req: http.IncomingMessage, route: AdminRoute): Promise<unknown> {
  if (!route.body) return void req.resume();
  const raw = await readBody(req, BODY_MAX);
  if (raw === 'too_large') throw new AdminApiError('payload_too_large', `the body may be at most ${BODY_MAX} bytes`);
  if (raw.length && !/^application\/json\s*(;|$)/i.test(String(req.headers['content-type'] ?? '')))
    throw new AdminApiError('unsupported_media_type', 'send the body as application/json');
  const json = jsonOf(raw);
  if (!json) throw new AdminApiError('invalid_request', 'the body is not valid JSON');
  const parsed = route.body.safeParse(json.value ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new AdminApiError('invalid_request', `${issue.path.length ? issue.path.join('.') + ': ' : ''}${issue.message}`);
}

/**
 * The route of an authenticated request: without a valid token nothing is told (not even whether a
 * route exists), so this comes after authentication; then the token's role and the ids' range.
 */
function routeOf(method: string, path: string, token: AuthenticatedToken) {
  const found = table.match(method, path);
  if (found.kind === 'not_found') throw new AdminApiError('not_found', `no route ${path}`);
  if (found.kind === 'method_not_allowed')
    throw new AdminApiError(
      'method_not_allowed',
      `${method} is not allowed on ${path}; allowed: ${found.allowed.join(', ')}`,
    );
  if (found.route.role === 'write' && token.role !== 'write')
    throw new AdminApiError('forbidden', `this needs a write token; token ${token.id} may only read`);
  const params = Object.fromEntries(Object.entries(found.params).map(([n, v]) => [n, Number(v)]));
  // Ten digits may still pass PostgreSQL's integer: such an id names nothing, and never reaches a query.
  if (Object.values(params).some((v) => v > PG_INT_MAX)) throw new AdminApiError('not_found', `no such ${path}`);
  return { route: found.route, params };
}

export function createAdminApiServer(deps: AdminApiDeps): http.Server {
  const doc = Buffer.from(JSON.stringify(adminOpenApi()));
  const contextFor = serviceContexts(deps);

  async function api(req: http.IncomingMessage, res: http.ServerResponse, url: URL, requestId: string) {
    const { pathname: path, searchParams: query } = url;
    const method = req.method ?? 'GET';
    const head = method === 'HEAD';
    if (path === '/api' || path === '/api/' || path === '/api/openapi.json') {
      // The description holds no secret: a client reads it before it holds a token, as with /v2/openapi.json.
      if (method !== 'GET' && !head) throw new AdminApiError('method_not_allowed', 'the document is read with GET');
      res.writeHead(200, {
        ...API_HEADERS,
        'content-type': 'application/json; charset=utf-8',
        'content-length': doc.length,
      });
      return void res.end(head ? undefined : doc);
    }
    const token = await authenticate(
      deps,
      req,
      clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trusted),
    );
    const { route, params } = routeOf(method, path, token);
    const body = await bodyOf(req, route);
    const ctx = contextFor(token, requestId);
    const answer = await route.handle({ deps, ctx, token, params, query, body, requestId });
    if (answer instanceof StreamedAnswer) return streamAnswer(res, route.status, answer, head);
    send(res, route.status, answer, {}, head);
  }

  return http.createServer((req, res) => {
    const requestId = randomUUID();
    res.setHeader('x-request-id', requestId);
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://admin');
    } catch {
      return send(res, 400, errorBody('invalid_request', 'the request target is not a path', requestId));
    }
    const path = url.pathname;
    const fail = (err: unknown) => sendFailure(deps, res, err, path, requestId);
    if (path === '/api' || path.startsWith('/api/')) return void api(req, res, url, requestId).catch(fail);
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return fail(new AdminApiError('method_not_allowed', 'the console is read with GET'));
    if (!deps.console) return fail(new AdminApiError('not_found', `no route ${path}`));
    deps.console
      .serve(path, req.method === 'HEAD', res)
      .then((served) => served || fail(new AdminApiError('not_found', `no file ${path}`)))
      .catch(fail);
  });
}

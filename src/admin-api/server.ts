// The admin API listener (ADMIN_API_PORT): /api/* for admin tokens, the OpenAPI document at /api, and
// the console's static files at /. Every /api operation needs a bearer admin token; a read token may
// only read. Failed token attempts are counted per client address in the shared limiter (Redis when
// configured, so the whole fleet counts one address's guesses together) and refused for the rest of
// the minute past ADMIN_AUTH_FAILURES.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { Plans } from '../config/plans.js';
import { windowStart, type SharedStores } from '../limits/types.js';
import type { Clock } from '../ops/clock.js';
import { addressKey } from '../limits/address.js';
import { clientIp, type TrustedProxies } from '../http/client-ip.js';
import { authenticateAdminToken, type AuthenticatedToken } from '../access/service/admin-tokens.js';
import type { ServiceContext } from '../access/service/context.js';
import { AdminApiError, errorBody, type AdminErrorCode } from './errors.js';
import { ROUTES, type AdminRoute } from './routes.js';
import { adminOpenApi } from './openapi.js';
import { type ConsoleFiles } from './console-files.js';
import type { OrgTraffic } from './traffic.js';
import { DB_ID_SOURCE, PG_INT_MAX } from '../config/contract.js';

/** Failed token attempts one client address may make per minute before it is refused (429). */
export const ADMIN_AUTH_FAILURES = 10;
const BODY_MAX = 64 * 1024;

export interface AdminApiDeps {
  db: Db;
  pepper: string;
  clock: Clock;
  log: Logger;
  stores: SharedStores;
  traffic: OrgTraffic;
  trusted: TrustedProxies;
  plans(): Plans;
  /** The service layer's context for one request, with this token as the actor. */
  serviceContext(token: AuthenticatedToken, requestId: string): ServiceContext;
  console?: ConsoleFiles;
}

interface Compiled {
  route: AdminRoute;
  pattern: RegExp;
  names: string[];
}

const compiled: Compiled[] = ROUTES.map((route) => {
  const names: string[] = [];
  const source = route.path.replace(/\{(\w+)\}/g, (_, n: string) => {
    names.push(n);
    return `(${DB_ID_SOURCE.slice(1, -1)})`;
  });
  return { route, pattern: new RegExp(`^${source}$`), names };
});

const API_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

function send(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string | number> = {},
  head = false,
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...API_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(head ? undefined : text);
}

function readBody(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const type = String(req.headers['content-type'] ?? '');
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > BODY_MAX)
      return reject(new AdminApiError('payload_too_large', `the body may be at most ${BODY_MAX} bytes`));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > BODY_MAX) {
        req.removeAllListeners('data');
        req.resume();
        reject(new AdminApiError('payload_too_large', `the body may be at most ${BODY_MAX} bytes`));
      } else chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size === 0) return resolve(undefined);
      if (!/^application\/json\s*(;|$)/i.test(type))
        return reject(new AdminApiError('unsupported_media_type', 'send the body as application/json'));
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new AdminApiError('invalid_request', 'the body is not valid JSON'));
      }
    });
  });
}

export function createAdminApiServer(deps: AdminApiDeps): http.Server {
  const doc = Buffer.from(JSON.stringify(adminOpenApi()));

  /**
   * A guess is counted before its token is looked up, so that guesses arriving together cannot all be
   * checked against a count none of them has added to yet. Per address and minute, `adm:` counts every
   * bearer token presented and `adm-ok:` the ones taken back: a valid token once checked, and a guess
   * refused unchecked. Their difference is the failures plus the checks in flight; a guess is checked
   * only while it is at most ADMIN_AUTH_FAILURES. The taken-back count is read before the guess is
   * counted, so a take-back can never be set against a guess it did not follow.
   */
  async function authenticate(req: http.IncomingMessage, ip: string): Promise<AuthenticatedToken> {
    const address = addressKey(ip);
    const tried = { id: `adm:${address}`, limit: ADMIN_AUTH_FAILURES };
    const takenBack = { id: `adm-ok:${address}`, limit: ADMIN_AUTH_FAILURES };
    const auth = req.headers.authorization;
    const m = typeof auth === 'string' ? /^Bearer +(\S+) *$/i.exec(auth) : null;
    const at = deps.clock.now();
    const [back] = await deps.stores.limiter.spend([takenBack], 0, at);
    // No token is no guess: read the count only, to tell such a client it is refused.
    const [seen] = await deps.stores.limiter.spend([tried], m ? 1 : 0, at);
    const pending = seen.used - back.used;
    const takeBack = () => {
      // A window that ended meanwhile took its count with it: nothing to take back from the next one.
      if (windowStart(deps.clock.now()) === windowStart(at)) return deps.stores.limiter.spend([takenBack], 1);
    };
    if (pending > ADMIN_AUTH_FAILURES || (!m && pending >= ADMIN_AUTH_FAILURES)) {
      if (m) await takeBack();
      const wait = Math.max(1, Math.ceil(seen.reset - deps.clock.now() / 1000));
      throw new AdminApiError(
        'too_many_attempts',
        'too many failed token attempts from this address; try again later',
        wait,
      );
    }
    if (!m) throw new AdminApiError('unauthorized', 'an admin token is required: Authorization: Bearer <token>');
    const token = await authenticateAdminToken(deps.db, deps.pepper, m[1], deps.clock.now()).catch(async (err) => {
      await takeBack(); // not a failed guess: the database did not answer
      throw err;
    });
    if (!token) throw new AdminApiError('unauthorized', 'the admin token is not valid (unknown or revoked)');
    await takeBack();
    return token;
  }

  async function api(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    query: URLSearchParams,
    requestId: string,
  ): Promise<void> {
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
    const matches = compiled.filter((c) => c.pattern.test(path));
    const ip = clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trusted);
    // Authentication first: without a valid token nothing more is told (not even whether a route exists).
    const token = await authenticate(req, ip);
    if (!matches.length) throw new AdminApiError('not_found', `no route ${path}`);
    const hit = matches.find((c) => c.route.method === method || (head && c.route.method === 'GET'));
    if (!hit)
      throw new AdminApiError(
        'method_not_allowed',
        `${method} is not allowed on ${path}; allowed: ${matches.map((c) => c.route.method).join(', ')}`,
      );
    const { route } = hit;
    if (route.role === 'write' && token.role !== 'write')
      throw new AdminApiError('forbidden', `this needs a write token; token ${token.id} may only read`);
    const groups = hit.pattern.exec(path)!;
    const params = Object.fromEntries(hit.names.map((n, i) => [n, Number(groups[i + 1])]));
    // Ten digits may still pass PostgreSQL's integer: such an id names nothing, and never reaches a query.
    if (Object.values(params).some((v) => v > PG_INT_MAX)) throw new AdminApiError('not_found', `no such ${path}`);
    let body: unknown;
    if (route.body) {
      const raw = await readBody(req);
      const parsed = route.body.safeParse(raw ?? {});
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new AdminApiError(
          'invalid_request',
          `${issue.path.length ? issue.path.join('.') + ': ' : ''}${issue.message}`,
        );
      }
      body = parsed.data;
    } else {
      req.resume();
    }
    const result = await route.handle({
      deps,
      ctx: deps.serviceContext(token, requestId),
      token,
      params,
      query,
      body,
      requestId,
    });
    send(res, route.status, result, {}, head);
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
    const fail = (err: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (err instanceof AdminApiError) {
        const headers: Record<string, string | number> = {};
        if (err.code === 'unauthorized') headers['www-authenticate'] = 'Bearer realm="keygate-admin"';
        if (err.retryAfter !== undefined) headers['retry-after'] = err.retryAfter;
        return send(res, err.status, errorBody(err.code, err.message, requestId), headers);
      }
      // A store that does not answer is a 503; anything else a 500, logged without the request's headers.
      const code: AdminErrorCode = /timeout|ECONNREFUSED|connect|terminat/i.test(String((err as Error)?.message))
        ? 'service_unavailable'
        : 'internal';
      deps.log.error({ err: (err as Error)?.message, path, requestId }, 'admin api request failed');
      send(
        res,
        code === 'internal' ? 500 : 503,
        errorBody(code, code === 'internal' ? 'internal error' : 'a store did not answer; try again', requestId),
      );
    };
    if (path === '/api' || path.startsWith('/api/'))
      return void api(req, res, path, url.searchParams, requestId).catch(fail);
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return fail(new AdminApiError('method_not_allowed', 'the console is read with GET'));
    if (!deps.console) return fail(new AdminApiError('not_found', `no route ${path}`));
    deps.console
      .serve(path, req.method === 'HEAD', res)
      .then((served) => {
        if (!served) fail(new AdminApiError('not_found', `no file ${path}`));
      })
      .catch(fail);
  });
}

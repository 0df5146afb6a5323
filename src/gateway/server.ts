// The gateway listener: the /v2 and /v1 pipelines of CONTRACT sections 3 and 4, then the proxy.
// Each numbered step below is one guard; the first that fails answers.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Routes, Bucket } from '../config/routes.js';
import { planOf, type Plans } from '../config/plans.js';
import { keyTypeOf } from '../access/secrets.js';
import { AccessStoreUnavailableError, type PrincipalCache } from '../access/cache.js';
import { StoreUnavailableError } from '../limits/resilient.js';
import type { Principal } from '../access/principal.js';
import { authorizeRoute, identityOf, organizationDenial, type Granted } from '../access/authorize.js';
import { encodeIdentity, sign } from '../http/identity.js';
import { ENVELOPE_A, envelopeA, envelopeB, v1Error, type CodeA, type CodeV1, V1_ERRORS, ENVELOPE_B } from '../http/errors.js';
import type { LayerState, LimitStores, Clock, CounterRef, HitResult } from '../limits/types.js';
import { pathProblem } from './path.js';
import { BoundedMemo } from '../config/memo.js';
import { clientIp, type TrustedProxies } from './client-ip.js';
import { retryAfter, setV1Headers, setV2Headers } from './headers.js';
import type { Forwarder, UpstreamFailure } from './proxy.js';
import type { GatewayMetrics } from '../ops/metrics.js';

export const IP_LIMIT = 100;
export const V1_LIMIT = 20;
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
const BUCKET_NAME: Record<Bucket, string> = { read: 'Read', write: 'Write', bulk: 'Bulk' };

export interface GatewayDeps {
  routes: () => Routes;
  plans: () => Plans;
  cache: PrincipalCache;
  stores: LimitStores;
  forwarder: Forwarder;
  trusted: TrustedProxies;
  clock: Clock;
  log: Logger;
  metrics: GatewayMetrics;
  gatewaySecret: string;
  bodyLimitBytes: number;
}

interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  ip: string;
  path: string;
  target: string;
  method: string;
  started: number;
  route: string;
  codeA: string | null;
}

function sendJson(x: Exchange, status: number, body: unknown, headers: Record<string, string | number> = {}) {
  const text = JSON.stringify(body);
  for (const [k, v] of Object.entries(headers)) x.res.setHeader(k, v);
  x.res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  x.res.end(x.method === 'HEAD' ? undefined : text);
}

export function createGatewayServer(deps: GatewayDeps): http.Server {
  const accessLog = deps.log.isLevelEnabled('debug');
  const server = http.createServer((req, res) => {
    handle(deps, req, res, accessLog).catch((err) => {
      deps.log.error({ err: (err as Error).message, stack: (err as Error).stack }, 'gateway request failed');
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify(envelopeB('internal_error', 'Internal error.', String(res.getHeader('x-request-id') ?? ''))));
      } else res.destroy();
    });
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return server;
}

async function handle(deps: GatewayDeps, req: IncomingMessage, res: ServerResponse, accessLog: boolean) {
  const rawUrl = req.url ?? '/';
  const q = rawUrl.indexOf('?');
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const hdrId = req.headers['x-request-id'];
  const x: Exchange = {
    req,
    res,
    requestId: typeof hdrId === 'string' && REQUEST_ID.test(hdrId) ? hdrId : randomUUID(),
    ip: clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trusted),
    path,
    target: rawUrl,
    method: req.method ?? 'GET',
    started: performance.now(),
    route: 'unmatched',
    codeA: null,
  };
  res.setHeader('X-Request-Id', x.requestId);
  res.on('finish', () => {
    const ms = performance.now() - x.started;
    deps.metrics.request(x.route, x.method, res.statusCode, x.codeA, ms);
    // The access log, allow-listed: no header, no key, no query string (LOG_LEVEL=debug to see it).
    if (accessLog) deps.log.debug({ requestId: x.requestId, method: x.method, route: x.route, status: res.statusCode, code: x.codeA, ms: Math.round(ms * 10) / 10 }, 'request');
  });
  const api = path === '/v2' || path.startsWith('/v2/') ? 'v2' : path === '/v1' || path.startsWith('/v1/') ? 'v1' : null;
  if (!api) return sendJson(x, 404, envelopeB('not_found', 'No such route.', x.requestId));
  try {
    await (api === 'v2' ? v2(deps, x) : v1(deps, x));
  } catch (err) {
    // A store we cannot do without is down: 503 with Retry-After, never a 401 or 403 (issue 5).
    const code = err instanceof StoreUnavailableError ? 'rate_limiter_unavailable' : err instanceof AccessStoreUnavailableError ? 'access_store_unavailable' : null;
    if (!code || x.res.headersSent) throw err;
    deps.log.warn({ code, err: (err as Error).message }, 'dependency unavailable');
    const message = code === 'rate_limiter_unavailable' ? 'The rate limiter is unavailable; retry shortly.' : 'The access store is unavailable; retry shortly.';
    if (api === 'v1') return sendJson(x, 503, v1Error(code === 'rate_limiter_unavailable' ? 'rate_limiter_unavailable' : 'service_unavailable', message), { 'Retry-After': 2 });
    sendJson(x, 503, envelopeB(code, message, x.requestId, {}, 2), { 'Retry-After': 2 });
  }
}

type Refusal = { code: 'invalid_request' | 'payload_too_large'; message: string };

/**
 * Step 1 (both interfaces): canonical path and body size. Returns the refusal, `null` when there is no
 * body, or the promise of the buffered body (only requests with a body wait for anything).
 */
function readCanonical(deps: GatewayDeps, x: Exchange): Refusal | null | Promise<Refusal | Buffer> {
  const problem = pathVerdicts.get(x.path, pathProblem);
  if (problem) return { code: 'invalid_request', message: problem };
  const cl = x.req.headers['content-length'];
  if (cl !== undefined) {
    if (!/^\d+$/.test(cl)) return { code: 'invalid_request', message: 'Invalid Content-Length.' };
    if (Number(cl) > deps.bodyLimitBytes) return { code: 'payload_too_large', message: `The body exceeds ${deps.bodyLimitBytes} bytes.` };
  }
  const hasBody = (cl !== undefined && cl !== '0') || x.req.headers['transfer-encoding'] !== undefined;
  return hasBody ? readBody(deps, x) : null;
}

async function readBody(deps: GatewayDeps, x: Exchange): Promise<Refusal | Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of x.req) {
    size += (c as Buffer).length;
    if (size > deps.bodyLimitBytes) return { code: 'payload_too_large', message: `The body exceeds ${deps.bodyLimitBytes} bytes.` };
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

// Paths repeat (a client polls the same resources): their step-1 verdict is remembered.
const pathVerdicts = new BoundedMemo<string, string | null>(10_000);

// ---------------------------------------------------------------- /v2

function keyCounter(p: Principal, bucket: Bucket, plans: Plans): CounterRef {
  return { id: `k:${p.keyId}:${bucket}`, limit: planOf(plans, p.plan).plan[bucket] };
}
const ipCounter = (ip: string): CounterRef => ({ id: `ip:${ip}`, limit: IP_LIMIT });
const bucketFor = (method: string): Bucket => (method === 'GET' || method === 'HEAD' ? 'read' : 'write');

/** What steps 5 to 10 decide for a resolved principal, before any counter is touched. */
type Decision =
  | { kind: 'deny'; code: CodeA; bucket: Bucket }
  | { kind: 'no_route'; bucket: Bucket }
  | { kind: 'status' }
  | { kind: 'spend'; bucket: Bucket; grant: Granted };

function decide(deps: GatewayDeps, x: Exchange, p: Principal): Decision {
  // Step 7 comes after 5 and 6, but the headers of a 5/6 refusal name the route's bucket.
  const match = deps.routes().v2.match(x.method, x.path);
  const bucket = match?.route.bucket ?? bucketFor(x.method);
  if (match) x.route = match.route.path;
  // 5. the plan has API access; 6. the subscription is not paused
  const orgDenied = organizationDenial(p);
  if (orgDenied) return { kind: 'deny', code: orgDenied, bucket };
  // 7. the route exists
  if (!match) return { kind: 'no_route', bucket };
  // 8-10. workspace, scope, role
  const grant = authorizeRoute(p, match.route, match.params);
  if (typeof grant === 'string') return { kind: 'deny', code: grant, bucket };
  // The gateway answers the rate-limit route itself, spending nothing.
  if (match.route.gateway) return { kind: 'status' };
  return { kind: 'spend', bucket, grant };
}

const BUCKETS: Bucket[] = ['read', 'write', 'bulk'];

/** The counters a decision spends (step 11) or shows without spending (every other answer). */
function countersOf(deps: GatewayDeps, x: Exchange, p: Principal, d: Decision): { spend?: [CounterRef, CounterRef]; peek?: CounterRef[] } {
  const plans = deps.plans();
  if (d.kind === 'spend') return { spend: [keyCounter(p, d.bucket, plans), ipCounter(x.ip)] };
  if (d.kind === 'status') return { peek: [...BUCKETS.map((b) => keyCounter(p, b, plans)), ipCounter(x.ip)] };
  return { peek: [ipCounter(x.ip), keyCounter(p, d.bucket, plans)] };
}

/** An answer before a key is resolved: it shows the IP layer without spending (CONTRACT 3, headers). */
async function failEarly(deps: GatewayDeps, x: Exchange, code: CodeA | Refusal['code'], message?: string, extra?: Record<string, string | number>) {
  const [ip] = await deps.stores.limiter.peek([ipCounter(x.ip)]);
  setV2Headers(x.res, null, ip);
  if (code === 'invalid_request' || code === 'payload_too_large') return sendJson(x, ENVELOPE_B[code], envelopeB(code, message!, x.requestId));
  x.codeA = code;
  sendJson(x, ENVELOPE_A[code].status, envelopeA(code), extra);
}

const BEARER = /^Bearer ([^\s]+)$/i;

function v2(deps: GatewayDeps, x: Exchange): Promise<void> | void {
  // 1. canonical path, body size
  const read = readCanonical(deps, x);
  if (read === null) return authorizeV2(deps, x, null);
  if (!(read instanceof Promise)) return failEarly(deps, x, read.code, read.message);
  return read.then((r) => (Buffer.isBuffer(r) ? authorizeV2(deps, x, r) : failEarly(deps, x, r.code, r.message)));
}

/** Steps 2 to 11 and the answer, for a request that passed step 1. */
async function authorizeV2(deps: GatewayDeps, x: Exchange, body: Buffer | null) {
  const { stores } = deps;
  // 2. a bearer key is present
  const auth = x.req.headers.authorization;
  const m = auth ? BEARER.exec(auth) : null;
  if (!m) return failEarly(deps, x, '150001');
  const secret = m[1];
  const type = keyTypeOf(secret);

  // The hot path: a cached principal. Steps 5-10 are decided locally; the store then checks the
  // cooldown (3) and that the principal is still exact (4), and spends or reads the counters (11),
  // in one Redis round trip. Nothing is spent unless both checks pass.
  // The cache key of the secret, computed once for both paths.
  let cacheKey: string | undefined;
  if (type === 'workspace' || type === 'personal') {
    const c = deps.cache.peek(secret);
    cacheKey = c.key;
    if (c.principal) {
      const d = decide(deps, x, c.principal);
      const g = await stores.gate({ ip: x.ip, orgId: c.principal.organizationId, version: c.version, ...countersOf(deps, x, c.principal, d) });
      if (g.kind === 'cooldown') {
        deps.metrics.authFailure('cooldown');
        return failEarly(deps, x, '150006', undefined, { 'Retry-After': g.seconds });
      }
      if (g.kind !== 'stale') {
        deps.cache.noteHit();
        deps.metrics.cache(true);
        return respond(deps, x, c.principal, d, g.kind === 'spent' ? g.hit : g.states, body);
      }
      deps.cache.drop(c.key); // an access change since it was cached: resolve again below
    }
  }

  // 3. the IP is not cooling down; 4. the key exists, is live, and its prefix fits its type
  let principal: Principal | null = null;
  if (type === 'workspace' || type === 'personal') {
    const found = await deps.cache.lookup(secret, type, x.ip, cacheKey);
    if (found.kind === 'cooldown') {
      deps.metrics.authFailure('cooldown');
      return failEarly(deps, x, '150006', undefined, { 'Retry-After': found.seconds });
    }
    if (found.kind === 'ok') principal = found.principal;
    deps.metrics.cache(false);
  } else {
    // Malformed or /v1 keys still meet the cooldown first.
    const seconds = await stores.cooldown.check(x.ip);
    if (seconds > 0) {
      deps.metrics.authFailure('cooldown');
      return failEarly(deps, x, '150006', undefined, { 'Retry-After': seconds });
    }
  }
  if (!principal) {
    await stores.cooldown.recordFailure(x.ip);
    deps.metrics.authFailure('invalid_key');
    return failEarly(deps, x, '150002');
  }
  const d = decide(deps, x, principal);
  const counters = countersOf(deps, x, principal, d);
  const result = counters.spend ? await stores.limiter.hit(...counters.spend) : await stores.limiter.peek(counters.peek!);
  return respond(deps, x, principal, d, result, body);
}

/** Answer a decided request: `counted` is the hit (step 11) or the counters read for the headers. */
function respond(deps: GatewayDeps, x: Exchange, p: Principal, d: Decision, counted: HitResult | LayerState[], body: Buffer | null) {
  if (d.kind === 'spend') {
    const hit = counted as HitResult;
    setV2Headers(x.res, hit.key, hit.ip);
    const keyOver = hit.key.used > hit.key.limit;
    const ipOver = hit.ip.used > hit.ip.limit;
    deps.metrics.rateLimit('key', keyOver, hit.key.remaining === 0);
    deps.metrics.rateLimit('ip', ipOver, hit.ip.remaining === 0);
    if (hit.allowed) return forward(deps, x, p, d.grant, body, 'v2');
    // 11. a token was spent in both layers all the same
    const breached = keyOver ? hit.key : hit.ip;
    const message = keyOver ? `Rate limit exceeded for the ${BUCKET_NAME[d.bucket]} bucket.` : `Rate limit exceeded for IP address ${x.ip}.`;
    x.codeA = '150005';
    return sendJson(x, 429, envelopeA('150005', message), { 'Retry-After': retryAfter(breached, deps.clock.now()) });
  }
  const states = counted as LayerState[];
  if (d.kind === 'status') return rateLimitStatus(deps, x, p, states);
  const [ip, key] = states;
  setV2Headers(x.res, key, ip);
  if (d.kind === 'no_route') return sendJson(x, 404, envelopeB('not_found', `No route ${x.method} ${x.path}.`, x.requestId));
  x.codeA = d.code;
  sendJson(x, ENVELOPE_A[d.code].status, envelopeA(d.code));
}

/** GET {wid}/rate-limit: the plan, each bucket and the IP layer, read without spending. */
function rateLimitStatus(deps: GatewayDeps, x: Exchange, p: Principal, states: LayerState[]) {
  const ip = states[3];
  setV2Headers(x.res, states[0], ip);
  const layer = (s: LayerState) => ({ limit: s.limit, used: s.used, remaining: s.remaining, reset: s.reset });
  const { id: plan } = planOf(deps.plans(), p.plan);
  sendJson(x, 200, {
    data: {
      plan,
      windowSeconds: 60,
      buckets: Object.fromEntries(BUCKETS.map((b, i) => [b, layer(states[i])])),
      ip: layer(ip),
    },
    meta: { request_id: x.requestId, timestamp: new Date(deps.clock.now()).toISOString() },
  });
}

// ---------------------------------------------------------------- /v1

async function v1(deps: GatewayDeps, x: Exchange) {
  const { stores } = deps;
  const fail = (code: CodeV1, message: string, key: LayerState | null, extra: Record<string, string | number> = {}) => {
    setV1Headers(x.res, V1_LIMIT, key, deps.clock.now());
    sendJson(x, V1_ERRORS[code], v1Error(code, message), extra);
  };
  const read = readCanonical(deps, x);
  const body = read instanceof Promise ? await read : read;
  if (body !== null && !Buffer.isBuffer(body)) return fail(body.code, body.message, null);

  const apiKey = x.req.headers['x-api-key'];
  if (typeof apiKey !== 'string' || apiKey === '') return fail('unauthorized', 'Missing X-Api-Key header.', null);
  let principal: Principal | null = null;
  if (keyTypeOf(apiKey) === 'partner') {
    const found = await deps.cache.lookup(apiKey, 'partner', x.ip);
    if (found.kind === 'cooldown') return fail('too_many_failed_attempts', 'Too many failed authentication attempts from this address; try again later.', null, { 'Retry-After': found.seconds });
    if (found.kind === 'ok') principal = found.principal;
  } else {
    const seconds = await stores.cooldown.check(x.ip);
    if (seconds > 0) return fail('too_many_failed_attempts', 'Too many failed authentication attempts from this address; try again later.', null, { 'Retry-After': seconds });
  }
  if (!principal) {
    await stores.cooldown.recordFailure(x.ip);
    deps.metrics.authFailure('invalid_key');
    return fail('unauthorized', 'Invalid or revoked API key.', null);
  }
  const counter: CounterRef = { id: `v1:${principal.keyId}`, limit: V1_LIMIT };
  const peekKey = async () => (await stores.limiter.peek([counter]))[0];
  if (!principal.apiAccess) return fail('api_access_disabled', 'The plan has no API access.', await peekKey());
  if (principal.paused) return fail('subscription_paused', 'Subscription paused: the organization is read-only.', await peekKey());

  const match = deps.routes().v1.match(x.method, x.path);
  if (!match) return fail('not_found', `No route ${x.method} ${x.path}.`, await peekKey());
  x.route = match.route.path;
  if (match.route.gateway) {
    const s = await peekKey();
    setV1Headers(x.res, V1_LIMIT, s, deps.clock.now());
    return sendJson(x, 200, { limit: s.limit, used: s.used, remaining: s.remaining, reset: s.reset, windowSeconds: 60 });
  }
  const s = await stores.limiter.hitOne(counter);
  setV1Headers(x.res, V1_LIMIT, s, deps.clock.now());
  deps.metrics.rateLimit('v1', s.used > s.limit, s.remaining === 0);
  if (s.used > s.limit) {
    return sendJson(x, 429, v1Error('rate_limit_exceeded', 'Rate limit exceeded: 20 requests per minute per key.', { limit: V1_LIMIT, reset: s.reset }), {
      'Retry-After': retryAfter(s, deps.clock.now()),
    });
  }
  forward(deps, x, principal, null, body, 'v1');
}

// ---------------------------------------------------------------- forwarding

// The identity header does not change per request for one principal and grant: encode it once.
const identities = new WeakMap<Principal, Map<string, string>>();
function identityHeader(p: Principal, grant: Granted | null): string {
  let m = identities.get(p);
  if (!m) identities.set(p, (m = new Map()));
  const k = grant ? `${grant.workspaceId}|${grant.role}` : '';
  let v = m.get(k);
  if (v === undefined) m.set(k, (v = encodeIdentity(identityOf(p, grant))));
  return v;
}

/** Request headers that never travel upstream: credentials, and anything posing as the gateway. */
const STRIPPED = new Set(['authorization', 'x-api-key', 'cookie', 'transfer-encoding', 'content-length', 'x-forwarded-for', 'x-request-id']);

function forward(deps: GatewayDeps, x: Exchange, p: Principal, grant: Granted | null, body: Buffer | null, api: 'v1' | 'v2') {
  const h = x.req.headers;
  // A fresh headers object rather than `delete`s on the parsed one (a deleted property turns it into a
  // slow dictionary that the proxy then copies). Nothing the client sent may pose as the gateway, and
  // no credential travels upstream.
  const out: http.IncomingHttpHeaders = {};
  for (const k in h) if (!STRIPPED.has(k) && !k.startsWith('x-gateway-')) out[k] = h[k];
  const identity = identityHeader(p, grant);
  const ts = String(deps.clock.now());
  out['x-request-id'] = x.requestId;
  out['x-gateway-identity'] = identity;
  out['x-gateway-timestamp'] = ts;
  out['x-gateway-signature'] = sign(deps.gatewaySecret, ts, x.requestId, x.method, x.target, identity);
  const xff = h['x-forwarded-for'];
  out['x-forwarded-for'] = xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${x.ip}` : x.ip;
  // A buffered body is sent with its exact length; a body-less request keeps the client's framing.
  if (body) out['content-length'] = String(body.length);
  else if (h['content-length'] !== undefined) out['content-length'] = h['content-length'];
  x.req.headers = out;
  // Forward exactly the authorized request target.
  x.req.url = x.target;
  deps.forwarder.forward(x.req, x.res, body, (kind: UpstreamFailure) => {
    deps.metrics.upstreamFailure(kind);
    const message = kind === 'bad_gateway' ? 'The upstream could not be reached.' : 'The upstream did not answer in time.';
    if (api === 'v1') return sendJson(x, V1_ERRORS[kind], v1Error(kind, message));
    sendJson(x, ENVELOPE_B[kind], envelopeB(kind, message, x.requestId));
  });
}

// Sign and forward an authorized request (docs/decisions.md section 5). The upstream gets a clean request
// (RFC 9110 section 7.6.1): no credential, no hop-by-hop field (nor any field the client named in
// Connection), no field spelled with underscores (which CGI-style upstreams read as dashes, e.g.
// `X_Api_Key` as `X-Api-Key`), nothing posing as the gateway; then the signed identity, the request
// id, the client address and, with a body, its RFC 9530 Content-Digest, which the signature covers.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Principal } from '../access/principal.js';
import type { Granted } from './guards/permission.js';
import { contentDigest, encodeIdentity, sign, type Identity } from '../http/identity.js';
import type { GatewayDeps, RequestContext } from './context.js';
import type { FieldList, UpstreamFailure } from './forward.js';
import { connectionOptions } from './fields.js';
import { announcesBody, readBody, type ReadBody } from './body.js';
import { refuse } from './refusals.js';
import { normalizeIp } from '../http/client-ip.js';

/** Request fields that never travel upstream. */
const DROPPED = new Set([
  // credentials
  'authorization',
  'x-api-key',
  'cookie',
  'proxy-authorization',
  // hop-by-hop (RFC 9110 section 7.6.1) and framing, which the gateway sets itself
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  // answered by the gateway itself (src/gateway/body.ts)
  'expect',
  // set by the gateway
  'content-length',
  'content-digest',
  'x-request-id',
  // Where the request came from and what it asked for, as an upstream may believe them: a method
  // override or an original URL would let the upstream act outside the method and path authorized
  // here, a client address or scheme would let the client pose as another. The gateway sends its own
  // X-Forwarded-For, X-Forwarded-Proto, X-Forwarded-Host and Forwarded (see forwardingFields).
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-original-url',
  'x-original-uri',
  'x-rewrite-url',
  'x-original-method',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-server',
  'x-forwarded-ssl',
  'x-forwarded-scheme',
  'x-url-scheme',
  'front-end-https',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-cluster-client-ip',
]);

/** A Host value (RFC 9110 section 7.2): a name or an IP literal, an optional port; nothing else. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;
// Nearly every request names the same host as the one before it: that verdict is kept.
let lastHost = '';
let lastHostValid = false;
function validHost(host: string): boolean {
  if (host !== lastHost) {
    lastHostValid = HOST.test(host);
    lastHost = host;
  }
  return lastHostValid;
}

function single(v: string | string[] | undefined): string | undefined {
  if (Array.isArray(v)) return v.length === 1 ? v[0] : undefined;
  return v;
}

/**
 * The client address, protocol and host as the gateway saw them. From a TRUST_PROXY peer (a TLS
 * terminator in front of the gateway) its X-Forwarded-Proto and X-Forwarded-Host are believed when
 * they are a scheme and a host; otherwise the protocol is the gateway's own listener's (http) and the
 * host the request's Host field. X-Forwarded-For keeps what came before and appends the client address
 * (docs/decisions.md section 5); Forwarded (RFC 7239) is one element of the gateway's own, replacing the client's.
 */
function forwardingFields(deps: GatewayDeps, ctx: RequestContext, out: FieldList): void {
  const h = ctx.req.headers;
  const peerTrusted = !deps.trusted.empty && deps.trusted.has(normalizeIp(ctx.req.socket.remoteAddress));
  let proto = 'http';
  let host = single(h.host);
  if (peerTrusted) {
    const p = single(h['x-forwarded-proto'])?.trim().toLowerCase();
    if (p === 'http' || p === 'https') proto = p;
    const fh = single(h['x-forwarded-host'])?.trim();
    if (fh && validHost(fh)) host = fh;
  }
  const xff = h['x-forwarded-for'];
  out.push(
    'x-forwarded-for',
    xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${ctx.ip}` : ctx.ip,
    'x-forwarded-proto',
    proto,
  );
  const forwarded = `for=${ctx.ip.includes(':') ? `"[${ctx.ip}]"` : ctx.ip};proto=${proto}`;
  if (host && validHost(host)) out.push('x-forwarded-host', host, 'forwarded', `${forwarded};host="${host}"`);
  else out.push('forwarded', forwarded);
}

/** What the upstream is told of the request's key: the principal, at the role and workspace granted. */
function identityOf(p: Principal, g: Granted | null): Identity {
  const id: Identity = {
    keyId: p.keyId,
    keyType: p.keyType,
    organizationId: p.organizationId,
    userId: p.userId,
    workspaceId: g?.workspaceId ?? p.workspaceId,
    role: g?.role ?? p.role,
    scopes: [...p.scopes],
    plan: p.plan,
  };
  // Only keys that carry metadata add the field: every other identity stays byte for byte as before.
  if (p.metadata !== null) id.metadata = p.metadata;
  return id;
}

// The identity header does not change per request for one principal and grant: encoded once. Nearly
// every principal is forwarded under one grant only (a workspace key acts in its workspace at its role),
// so that one is kept in a small record; a Map is made for a principal seen under a second grant (a
// personal key in several workspaces). A Map per principal cost about 350 bytes per cached key in V8's
// heap (its table and itself), the record about 40 (bench/RESULTS.md, issue 25).
interface Encoded {
  granted: boolean;
  workspaceId: number | null;
  role: string | null;
  identity: string;
}
const identities = new WeakMap<Principal, Encoded | Map<string, string>>();
const grantKey = (g: Granted | null) => (g ? `${g.workspaceId}|${g.role}` : '');
function identityHeader(principal: Principal, grant: Granted | null): string {
  const held = identities.get(principal);
  if (held === undefined) {
    const identity = encodeIdentity(identityOf(principal, grant));
    identities.set(principal, {
      granted: grant !== null,
      workspaceId: grant?.workspaceId ?? null,
      role: grant?.role ?? null,
      identity,
    });
    return identity;
  }
  let byGrant: Map<string, string>;
  if (held instanceof Map) byGrant = held;
  else if (
    grant === null ? !held.granted : held.granted && held.workspaceId === grant.workspaceId && held.role === grant.role
  )
    return held.identity;
  else {
    byGrant = new Map([[grantKey(held.granted ? held : null), held.identity]]);
    identities.set(principal, byGrant);
  }
  const k = grantKey(grant);
  let v = byGrant.get(k);
  if (v === undefined) byGrant.set(k, (v = encodeIdentity(identityOf(principal, grant))));
  return v;
}

/**
 * The client's fields that travel upstream, as a flat list undici takes as it is: an object was walked
 * again by undici (its keys, then a keyed load each), in V8's megamorphic paths. Every field the gateway
 * sets itself is dropped here (DROPPED, `x-gateway-*`; the trace context when a trace hook sets it), so
 * appending the gateway's own never sends a name twice.
 */
function cleanHeaders(headers: IncomingHttpHeaders, traced: boolean): FieldList {
  const named = connectionOptions(headers.connection);
  const out: FieldList = [];
  for (const k in headers) {
    if (DROPPED.has(k) || k.startsWith('x-gateway-') || k.includes('_') || named?.has(k)) continue;
    if (traced && (k === 'traceparent' || k === 'tracestate')) continue;
    const v = headers[k];
    if (v !== undefined) out.push(k, v);
  }
  return out;
}

export function forwardAuthorized(
  deps: GatewayDeps,
  ctx: RequestContext,
  principal: Principal,
  grant: Granted | null,
  body: ReadBody | null,
): void {
  const out = cleanHeaders(ctx.req.headers, ctx.span !== null);
  const now = deps.clock.now();
  out.push('x-request-id', ctx.requestId);
  let digest: string | undefined;
  if (body) {
    digest = contentDigest(body.bytes);
    out.push('content-digest', digest, 'content-length', String(body.bytes.length));
  } else if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    out.push('content-length', '0');
  }
  if (deps.identityHmac) {
    const identity = identityHeader(principal, grant);
    const ts = String(now);
    const signature = sign(deps.gatewaySecret, ts, ctx.requestId, ctx.method, ctx.target, identity, digest);
    out.push('x-gateway-identity', identity, 'x-gateway-timestamp', ts, 'x-gateway-signature', signature);
  }
  if (deps.identityJwt) {
    const jwt = deps.identityJwt;
    const token = jwt.sign(
      {
        identity: identityOf(principal, grant),
        method: ctx.method,
        target: ctx.target,
        requestId: ctx.requestId,
        contentDigest: digest,
      },
      now,
    );
    out.push(jwt.header, jwt.headerValue(token));
  }
  forwardingFields(deps, ctx, out);
  if (ctx.span) {
    const trace: OutgoingHttpHeaders = {};
    ctx.span.upstream(trace);
    for (const k in trace) out.push(k, String(trace[k]));
  }
  deps.forwarder.forward(
    { method: ctx.method, target: ctx.target, headers: out, body: body?.bytes ?? null, head: ctx.head },
    ctx.res,
    (kind: UpstreamFailure) => {
      deps.metrics.upstreamFailure(kind);
      refuse(ctx, {
        code: kind,
        message: kind === 'bad_gateway' ? 'The upstream could not be reached.' : 'The upstream did not answer in time.',
      });
    },
    body?.release,
  );
}

/**
 * Read the body (only now: the request is authorized and within its limits), then forward. A request
 * without a body is forwarded at once, without a promise of its own.
 */
export function forwardWithBody(
  deps: GatewayDeps,
  ctx: RequestContext,
  principal: Principal,
  grant: Granted | null,
): Promise<void> | void {
  if (!announcesBody(ctx.req)) return forwardAuthorized(deps, ctx, principal, grant, null);
  return readAndForward(deps, ctx, principal, grant);
}

async function readAndForward(
  deps: GatewayDeps,
  ctx: RequestContext,
  principal: Principal,
  grant: Granted | null,
): Promise<void> {
  const owner = { key: String(principal.keyId), address: ctx.ip };
  const body = await readBody(ctx.req, ctx.res, {
    maxBytes: deps.bodyLimitBytes,
    timeoutMs: deps.bodyTimeoutMs,
    budget: deps.bodyBudget,
    owner,
  });
  if (body === null) return; // the client went away
  if ('code' in body) return refuse(ctx, body);
  forwardAuthorized(deps, ctx, principal, grant, body);
}

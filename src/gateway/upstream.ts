// Sign and forward an authorized request (CONTRACT section 5). The upstream gets a clean request
// (RFC 9110 section 7.6.1): no credential, no hop-by-hop field (nor any field the client named in
// Connection), no field spelled with underscores (which CGI-style upstreams read as dashes, e.g.
// `X_Api_Key` as `X-Api-Key`), nothing posing as the gateway; then the signed identity, the request
// id, the client address and, with a body, its RFC 9530 Content-Digest, which the signature covers.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Principal } from '../access/principal.js';
import { identityOf, type Granted } from '../access/authorize.js';
import { contentDigest, encodeIdentity, sign } from '../http/identity.js';
import type { GatewayDeps, RequestContext } from './context.js';
import { connectionOptions, type UpstreamFailure } from './forward.js';
import { announcesBody, readBody, type ReadBody } from './body.js';
import { refuse } from './refusals.js';

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
  'x-forwarded-for',
  'x-request-id',
]);

// The identity header does not change per request for one principal and grant: encode it once.
const identities = new WeakMap<Principal, Map<string, string>>();
function identityHeader(principal: Principal, grant: Granted | null): string {
  let byGrant = identities.get(principal);
  if (!byGrant) identities.set(principal, (byGrant = new Map()));
  const k = grant ? `${grant.workspaceId}|${grant.role}` : '';
  let v = byGrant.get(k);
  if (v === undefined) byGrant.set(k, (v = encodeIdentity(identityOf(principal, grant))));
  return v;
}

function cleanHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = connectionOptions(headers.connection);
  // A fresh object rather than `delete`s on the parsed one (a deleted property makes a slow dictionary).
  const out: OutgoingHttpHeaders = {};
  for (const k in headers) {
    if (DROPPED.has(k) || k.startsWith('x-gateway-') || k.includes('_') || named?.has(k)) continue;
    out[k] = headers[k];
  }
  return out;
}

export function forwardAuthorized(deps: GatewayDeps, ctx: RequestContext, principal: Principal, grant: Granted | null, body: ReadBody | null): void {
  const h = ctx.req.headers;
  const out = cleanHeaders(h);
  const now = deps.clock.now();
  out['x-request-id'] = ctx.requestId;
  let digest: string | undefined;
  if (body) {
    digest = contentDigest(body.bytes);
    out['content-digest'] = digest;
    out['content-length'] = String(body.bytes.length);
  } else if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    out['content-length'] = '0';
  }
  if (deps.identityHmac) {
    const identity = identityHeader(principal, grant);
    const ts = String(now);
    out['x-gateway-identity'] = identity;
    out['x-gateway-timestamp'] = ts;
    out['x-gateway-signature'] = sign(deps.gatewaySecret, ts, ctx.requestId, ctx.method, ctx.target, identity, digest);
  }
  if (deps.identityJwt) {
    const jwt = deps.identityJwt;
    const token = jwt.sign({ identity: identityOf(principal, grant), method: ctx.method, target: ctx.target, requestId: ctx.requestId, contentDigest: digest }, now);
    out[jwt.header] = jwt.headerValue(token);
  }
  const xff = h['x-forwarded-for'];
  out['x-forwarded-for'] = xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${ctx.ip}` : ctx.ip;
  deps.forwarder.forward(
    { method: ctx.method, target: ctx.target, headers: out, body: body?.bytes ?? null, head: ctx.head },
    ctx.res,
    (kind: UpstreamFailure) => {
      deps.metrics.upstreamFailure(kind);
      refuse(ctx, { code: kind, message: kind === 'bad_gateway' ? 'The upstream could not be reached.' : 'The upstream did not answer in time.' });
    },
    body?.release,
  );
}

/** Read the body (only now: the request is authorized and within its limits), then forward. */
export async function forwardWithBody(deps: GatewayDeps, ctx: RequestContext, principal: Principal, grant: Granted | null): Promise<void> {
  if (!announcesBody(ctx.req)) return forwardAuthorized(deps, ctx, principal, grant, null);
  const owner = { key: String(principal.keyId), address: ctx.ip };
  const body = await readBody(ctx.req, ctx.res, { maxBytes: deps.bodyLimitBytes, timeoutMs: deps.bodyTimeoutMs, budget: deps.bodyBudget, owner });
  if (body === null) return; // the client went away
  if ('code' in body) return refuse(ctx, body);
  forwardAuthorized(deps, ctx, principal, grant, body);
}

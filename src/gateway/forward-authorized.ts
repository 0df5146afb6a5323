// Sign and forward an authorized request (docs/decisions.md section 5) to its route's service
// (./upstreams/registry.ts). The upstream gets a clean request (./request-fields.ts); then the signed
// identity (./identity-headers.ts), the request id, the client address and, with a body, its RFC 9530
// Content-Digest, which the signature covers. A service's `stripPrefix` is applied first: the
// signature covers the target the service receives (before a target's own base path).
import type { OutgoingHttpHeaders } from 'node:http';
import type { Principal } from '../access/principal.js';
import type { RouteDef } from '../config/routes.js';
import { stripPrefix } from '../config/services.js';
import type { Granted } from './guards/permission.js';
import { contentDigest, sign } from '../http/identity.js';
import type { GatewayDeps, RequestContext } from './context.js';
import type { FieldList, UpstreamFailure } from './upstream-client.js';
import { announcesBody, readBody, type ReadBody } from './body-read.js';
import { refuse } from './answers.js';
import { cleanHeaders, forwardingFields } from './request-fields.js';
import { identityHeader, identityOf } from './identity-headers.js';
import { tunnelUpgrade } from './websocket.js';

export function forwardAuthorized(
  deps: GatewayDeps,
  ctx: RequestContext,
  principal: Principal,
  grant: Granted | null,
  body: ReadBody | null,
  route: RouteDef,
): void {
  const upstream = deps.upstreams.of(route.service);
  const strip = upstream.config.stripPrefix;
  const target = strip === undefined ? ctx.target : stripPrefix(ctx.target, strip);
  const { spec } = ctx.iface;
  const out = cleanHeaders(ctx.req.headers, ctx.span !== null, spec.key.header);
  const now = deps.clock.now();
  out.push('x-request-id', ctx.requestId);
  let digest: string | undefined;
  if (body) {
    digest = contentDigest(body.bytes);
    out.push('content-digest', digest, 'content-length', String(body.bytes.length));
  } else if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    out.push('content-length', '0');
  }
  // A profile may tell its upstream nothing of the caller (docs/profiles.md, `identity: none`).
  if (spec.identity !== 'none') addIdentityFields(deps, out, ctx, principal, grant, target, digest, now);
  forwardingFields(deps, ctx, out);
  if (ctx.span) {
    const trace: OutgoingHttpHeaders = {};
    ctx.span.upstream(trace);
    for (const k in trace) out.push(k, String(trace[k]));
  }
  // An admitted WebSocket upgrade is tunnelled to its service (./websocket.ts).
  if (ctx.upgrade) return tunnelUpgrade(deps, ctx, upstream, out, principal.keyId);
  upstream.forwarder.forward(
    { method: ctx.method, target, headers: out, body: body?.bytes ?? null, head: ctx.head, route: route.forwarding },
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
 * The signed identity of an admitted request (docs/decisions.md section 5), pushed onto `out`: the HMAC
 * fields and the identity JWT as IDENTITY_FORMAT says, over the method, the target the service
 * receives and, with a body, its digest. The decision service (src/decision/) sends the same fields
 * for another proxy to pass on.
 */
export function addIdentityFields(
  deps: GatewayDeps,
  out: FieldList,
  ctx: Pick<RequestContext, 'method' | 'requestId'>,
  principal: Principal,
  grant: Granted | null,
  target: string,
  digest: string | undefined,
  now: number,
): void {
  if (deps.identityHmac) {
    const identity = identityHeader(principal, grant);
    const ts = String(now);
    const signature = sign(deps.gatewaySecret, ts, ctx.requestId, ctx.method, target, identity, digest);
    out.push('x-gateway-identity', identity, 'x-gateway-timestamp', ts, 'x-gateway-signature', signature);
  }
  if (deps.identityJwt) {
    const jwt = deps.identityJwt;
    const token = jwt.sign(
      {
        identity: identityOf(principal, grant),
        method: ctx.method,
        target,
        requestId: ctx.requestId,
        contentDigest: digest,
      },
      now,
    );
    out.push(jwt.header, jwt.headerValue(token));
  }
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
  route: RouteDef,
): Promise<void> | void {
  // Deciding for another proxy: the request is admitted, its body is not ours to read.
  if (ctx.admit) return ctx.admit(principal, grant, route);
  if (!announcesBody(ctx.req)) return forwardAuthorized(deps, ctx, principal, grant, null, route);
  return readAndForward(deps, ctx, principal, grant, route);
}

async function readAndForward(
  deps: GatewayDeps,
  ctx: RequestContext,
  principal: Principal,
  grant: Granted | null,
  route: RouteDef,
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
  forwardAuthorized(deps, ctx, principal, grant, body, route);
}

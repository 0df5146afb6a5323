// The /v2 pipeline: the steps of CONTRACT section 3, in order; the first that fails answers. Each step
// is a guard under ./guards/. Steps 3 and 4 (cooldown, key) and the counters of step 11 go through
// the access resolver, which needs one Redis round trip for a cached key; steps 5 to 10 are decided
// on the principal before that round trip, so it knows whether to spend or only read.
import type { Principal } from '../access/principal.js';
import type { Granted } from '../access/authorize.js';
import type { Bucket, RouteDef } from '../config/routes.js';
import { planOf } from '../config/plans.js';
import type { LayerState } from '../limits/types.js';
import type { GatewayDeps, RequestContext } from './context.js';
import type { CounterPlan } from '../access/resolver.js';
import { canonicalRequest } from './guards/canonical.js';
import { bearerSecret } from './guards/credential.js';
import { organizationGuard } from './guards/organization.js';
import { routeGuard } from './guards/route.js';
import { permissionGuard } from './guards/permission.js';
import { BUCKETS, ipCounter, keyCounter, rateLimitGuard } from './guards/rate-limit.js';
import { refuse, sendJson, type Refusal } from './refusals.js';
import { addV2Headers } from './headers.js';
import { forwardWithBody } from './upstream.js';
import { layersOver, limitModeOf, recordShadowRefusal } from './shadow.js';
import { bodyRoomRefusal } from './body.js';

/**
 * What steps 5 to 10 decided for a principal, before any counter is touched. Counters always travel
 * key first, then the address: [key bucket, ip] spent or read, or [read, write, bulk, ip] read.
 */
type Decision =
  | { kind: 'refused'; refusal: Refusal; bucket: Bucket }
  | { kind: 'rate_limit_status' }
  | { kind: 'forward'; bucket: Bucket; grant: Granted; route: RouteDef };

const V2_KEYS = ['workspace', 'personal'] as const;
const bucketOf = (method: string): Bucket => (method === 'GET' || method === 'HEAD' ? 'read' : 'write');

export async function v2(deps: GatewayDeps, ctx: RequestContext): Promise<void> {
  // 1. canonical path and framing, from the head (the body is read once the request is authorized)
  const malformed = canonicalRequest(ctx.req, ctx.path, deps.bodyLimitBytes, deps.targetMaxBytes);
  if (malformed) return refuseUnkeyed(deps, ctx, malformed);
  // 2. a bearer key
  const secret = bearerSecret(ctx.req);
  if (!secret) return refuseUnkeyed(deps, ctx, { code: '150001' });
  // 3. the address is not cooling down; 4. the key is live and fits its type (a failure is counted);
  // 5-10 decided on the principal; the counters of 11 spent or read
  // A sampled request's own resolver when tracing (its spans), else the gateway's.
  const access = await (ctx.span?.access ?? deps.access).resolve(secret, V2_KEYS, ctx.ip, (p) => decide(deps, ctx, p));
  if (access.kind === 'cooldown') return refuseUnkeyed(deps, ctx, { code: '150006', retryAfter: access.seconds });
  if (access.kind === 'invalid') return refuseUnkeyed(deps, ctx, { code: '150002' });
  const { principal, decision, states } = access;
  ctx.trace.organizationId = principal.organizationId;
  ctx.trace.keyId = principal.keyId;

  if (decision.kind === 'rate_limit_status') return rateLimitStatus(deps, ctx, principal, states);
  if (decision.kind === 'refused') {
    const [key, ip] = states;
    addV2Headers(ctx.head, key, ip, deps.clock.now(), decision.bucket);
    return refuse(ctx, decision.refusal);
  }
  // 11. both layers (a token was spent in each, accepted or not)
  const [key, ip] = states;
  addV2Headers(ctx.head, key, ip, deps.clock.now(), decision.bucket);
  deps.metrics.rateLimit('key', key.used > key.limit, key.remaining === 0);
  deps.metrics.rateLimit('ip', ip.used > ip.limit, ip.remaining === 0);
  const limited = rateLimitGuard(key, ip, decision.bucket, ctx.ip, deps.clock.now());
  if (limited) {
    if (limitModeOf(deps.limitMode, planOf(deps.plans(), principal.plan).plan, decision.route) === 'enforce') return refuse(ctx, limited);
    recordShadowRefusal(deps, ctx, limited, layersOver(['key', key], ['ip', ip]));
  }
  return forwardWithBody(deps, ctx, principal, decision.grant);
}

/** Steps 5 to 10, and the counters step 11 will spend, or read for the headers of a refusal. */
function decide(deps: GatewayDeps, ctx: RequestContext, principal: Principal): { decision: Decision; counters: CounterPlan } {
  const plans = deps.plans();
  const ip = ipCounter(ctx.ip);
  // Step 7 comes after 5 and 6, but the headers of a 5 or 6 refusal name the route's bucket.
  const match = routeGuard(deps.routes().v2, ctx.method, ctx.path);
  const bucket = match?.route.bucket ?? bucketOf(ctx.method);
  if (match) ctx.trace.route = match.route.path;
  const refused = (refusal: Refusal) => ({ decision: { kind: 'refused' as const, refusal, bucket }, counters: { peek: [keyCounter(principal, bucket, plans), ip] } });
  // 5, 6
  const orgRefusal = organizationGuard(principal);
  if (orgRefusal) return refused(orgRefusal);
  // 7
  if (!match) return refused({ code: 'not_found', message: `No route ${ctx.method} ${ctx.path}.` });
  // 8, 9, 10
  const grant = permissionGuard(principal, match);
  if ('code' in grant) return refused(grant);
  // The rate-limit route is answered by the gateway itself, spending nothing.
  if (match.route.gateway) return { decision: { kind: 'rate_limit_status' }, counters: { peek: [...BUCKETS.map((b) => keyCounter(principal, b, plans)), ip] } };
  // A body there is no room for now is refused before any token is spent (./body.ts).
  const noRoom = bodyRoomRefusal(deps.bodyBudget, { key: String(principal.keyId), address: ctx.ip }, ctx.req);
  if (noRoom) return refused(noRoom);
  return { decision: { kind: 'forward', bucket, grant, route: match.route }, counters: { spend: [keyCounter(principal, bucket, plans), ip] } };
}

/** An answer before a key is resolved (steps 1 to 4): it shows the address layer without spending. */
async function refuseUnkeyed(deps: GatewayDeps, ctx: RequestContext, refusal: Refusal): Promise<void> {
  const [ip] = await deps.stores.limiter.spend([ipCounter(ctx.ip)], 0);
  addV2Headers(ctx.head, null, ip, deps.clock.now());
  refuse(ctx, refusal);
}

/** GET {wid}/rate-limit: the plan, each bucket and the address layer, read without spending. */
function rateLimitStatus(deps: GatewayDeps, ctx: RequestContext, principal: Principal, states: LayerState[]) {
  const ip = states[BUCKETS.length];
  addV2Headers(ctx.head, states[0], ip, deps.clock.now(), 'read');
  const layer = (s: LayerState) => ({ limit: s.limit, used: s.used, remaining: s.remaining, reset: s.reset });
  sendJson(ctx, 200, {
    data: {
      plan: planOf(deps.plans(), principal.plan).id,
      windowSeconds: 60,
      buckets: Object.fromEntries(BUCKETS.map((b, i) => [b, layer(states[i])])),
      ip: layer(ip),
    },
    meta: { request_id: ctx.requestId, timestamp: new Date(deps.clock.now()).toISOString() },
  });
}

// The request pipeline, one for every interface of every profile (docs/profiles.md), in named phases;
// the first that refuses answers:
//   read       the canonical request (./guards/canonical.ts) and the key (the interface's `key`);
//   resolve    the address is not cooling down, the key is live and of the interface's types (the
//              access resolver, which counts a failure);
//   authorize  the decision on the principal: organization, route, scope and role as the interface's
//              model has them (./decisions.ts, pure), made inside the resolver's round trip so it knows
//              whether to spend the counters or only read them;
//   limit      the key's layer, the address layer, then the monthly quota, spent only by a request every
//              per-minute layer admitted;
//   forward    the body read, the identity signed, the request sent to the route's service;
//   answer     every answer's rate-limit fields written once, from the layers spent or read, and each
//              refusal in the interface's envelope (./answers.ts).
// The workspace API's /v2 and /v1 are two interfaces of its profile (docs/decisions.md sections 3 and 4
// number the same steps).
import type { Principal } from '../access/principal.js';
import { planOf } from '../config/plans.js';
import type { LayerState } from '../limits/types.js';
import { ipCounter } from '../limits/counters.js';
import type { GatewayDeps, RequestContext } from './context.js';
import type { GatewayInterface } from './interfaces.js';
import { canonicalRequest } from './guards/canonical.js';
import { monthlyQuotaGuard, partnerRateLimitGuard, rateLimitGuard } from './guards/rate-limit.js';
import { limitOutcome, type Admit } from './decisions.js';
import { resolverPlan } from './resolver-plan.js';
import { refuse } from './answers.js';
import type { Refusal } from './refusal.js';
import { addRateLimitFields, untouchedLayer } from './headers.js';
import { forwardWithBody } from './forward-authorized.js';
import { layersOver, limitModeOf, recordShadowRefusal } from './shadow.js';
import { bucketsStatus, singleLayerStatus } from './status-route.js';

export async function pipeline(deps: GatewayDeps, ctx: RequestContext): Promise<void> {
  const iface = ctx.iface;
  // read
  const malformed = canonicalRequest(ctx.req, ctx.path, deps.bodyLimitBytes, deps.targetMaxBytes);
  if (malformed) return refuseUnkeyed(deps, ctx, malformed);
  const secret = iface.readKey(ctx.req);
  if (!secret) return refuseUnkeyed(deps, ctx, iface.missingKey);
  // resolve, and authorize inside its round trip. A sampled request's own resolver when tracing (its
  // spans), else the gateway's.
  const access = await (ctx.span?.access ?? deps.access).resolve(
    secret,
    iface.spec.keyTypes,
    ctx.ip,
    resolverPlan(deps, ctx),
  );
  if (access.kind === 'cooldown') return refuseUnkeyed(deps, ctx, { code: '150006', retryAfter: access.seconds });
  if (access.kind === 'invalid') return refuseUnkeyed(deps, ctx, { code: '150002' });
  const { principal, decision, states } = access;
  ctx.trace.organizationId = principal.organizationId;
  ctx.trace.keyId = principal.keyId;
  // One reading of the clock for every field and refusal of this answer.
  const now = deps.clock.now();
  addRateLimitFields(ctx.head, iface.spec.headers, limitOutcome(iface.layers, decision, states), now);
  if (decision.kind === 'status') return status(deps, ctx, principal, states);
  if (decision.kind === 'refuse') return refuse(ctx, decision.refusal);
  // limit
  if (!limit(deps, ctx, iface, principal, decision, states, now)) return;
  // forward
  return forwardWithBody(deps, ctx, principal, decision.grant, decision.route);
}

/**
 * The limit phase of an admitted request: every per-minute layer (a token was spent in each, accepted or
 * not), then the monthly quota. False when a layer refused and the refusal was answered. Limits refuse
 * only where they are enforced; in shadow the refusal is logged, counted and the request forwarded with
 * the same fields (./shadow.ts).
 */
function limit(
  deps: GatewayDeps,
  ctx: RequestContext,
  iface: GatewayInterface,
  principal: Principal,
  decision: Admit,
  states: LayerState[],
  now: number,
): boolean {
  const key = states[0];
  const ip = iface.layers.address ? states[1] : null;
  const month: LayerState | undefined = states[ip ? 2 : 1];
  deps.metrics.rateLimit(iface.keyMetric, key.used > key.limit, key.remaining === 0);
  if (ip) deps.metrics.rateLimit('ip', ip.used > ip.limit, ip.remaining === 0);
  const limited =
    iface.layers.single === null
      ? rateLimitGuard(key, ip, decision.bucket, ctx.ip, now)
      : partnerRateLimitGuard(key, now);
  const enforce = limitModeOf(deps.limitMode, planOf(deps.plans(), principal.plan).plan, decision.route) === 'enforce';
  if (limited) {
    if (enforce) {
      refuse(ctx, limited);
      return false;
    }
    recordShadowRefusal(
      deps,
      ctx,
      limited,
      ip ? layersOver([iface.keyMetric, key], ['ip', ip]) : layersOver([iface.keyMetric, key]),
    );
  }
  if (month) {
    deps.metrics.rateLimit('month', month.used > month.limit, month.remaining === 0);
    deps.monthSpent?.(principal.organizationId, month, now);
  }
  const exhausted = monthlyQuotaGuard(month, now);
  if (exhausted) {
    if (enforce) {
      refuse(ctx, exhausted);
      return false;
    }
    recordShadowRefusal(deps, ctx, exhausted, ['month']);
  }
  return true;
}

/** The interface's rate-limit status route: its layers, read without spending. */
function status(deps: GatewayDeps, ctx: RequestContext, principal: Principal, states: LayerState[]): void {
  const { layers } = ctx.iface;
  if (layers.single === null) bucketsStatus(deps, ctx, principal, states, layers.address);
  else singleLayerStatus(ctx, states);
}

/**
 * An answer before a key is resolved (read and resolve): an interface with an address layer shows it,
 * read without spending; one with a single per-key layer shows that layer's untouched window, since the
 * request spent nothing.
 */
async function refuseUnkeyed(deps: GatewayDeps, ctx: RequestContext, refusal: Refusal): Promise<void> {
  const { spec, layers } = ctx.iface;
  if (spec.addressLimit !== null) {
    const [ip] = await deps.stores.limiter.spend([ipCounter(ctx.ip, spec.addressLimit)], 0);
    addRateLimitFields(ctx.head, spec.headers, { key: null, policy: '', ip }, deps.clock.now());
  } else if (layers.single !== null && spec.keyLimit !== null) {
    const now = deps.clock.now();
    addRateLimitFields(
      ctx.head,
      spec.headers,
      { key: untouchedLayer(spec.keyLimit, now), policy: layers.single, ip: null },
      now,
    );
  }
  refuse(ctx, refusal);
}

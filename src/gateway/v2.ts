// The /v2 pipeline: the steps of docs/decisions.md section 3, in order; the first that fails answers. Each step's
// rule is a guard under ./guards/. Steps 3 and 4 (cooldown, key) and the counters of step 11 go through
// the access resolver, which needs one Redis round trip for a cached key; steps 5 to 10 are decided
// on the principal before that round trip (./decisions.ts, pure), so it knows whether to spend or only
// read. Every answer's rate-limit fields are written once, from the layers it spent or read.
import type { Principal } from '../access/principal.js';
import { WORKSPACE_INTERFACES } from '../config/profile/workspace.js';
import type { Bucket } from '../config/routes.js';
import { WINDOW_SECONDS } from '../config/contract.js';
import { planOf } from '../config/plans.js';
import { budgetSource } from '../config/budgets.js';
import type { LayerState } from '../limits/types.js';
import type { GatewayDeps, RequestContext } from './context.js';
import { canonicalRequest } from './guards/canonical.js';
import { bearerSecret } from './guards/credential.js';
import { monthlyQuotaGuard, rateLimitGuard } from './guards/rate-limit.js';
import { BUCKETS, ipCounter } from '../limits/counters.js';
import { limitOutcome } from './decisions.js';
import { resolverPlan } from './resolver-plan.js';
import { refuse, sendJson } from './answers.js';
import type { Refusal } from './refusal.js';
import { addRateLimitFields } from './headers.js';
import { forwardWithBody } from './forward-authorized.js';
import { layersOver, limitModeOf, recordShadowRefusal } from './shadow.js';

const V2_KEYS = WORKSPACE_INTERFACES[0].keyTypes;

export async function v2(deps: GatewayDeps, ctx: RequestContext): Promise<void> {
  // 1. canonical path and framing, from the head (the body is read once the request is authorized)
  const malformed = canonicalRequest(ctx.req, ctx.path, deps.bodyLimitBytes, deps.targetMaxBytes);
  if (malformed) return refuseUnkeyed(deps, ctx, malformed);
  // 2. a bearer key
  const secret = bearerSecret(ctx.req);
  if (!secret) return refuseUnkeyed(deps, ctx, { code: '150001' });
  // 3. the address is not cooling down; 4. the key is live and fits its type (a failure is counted);
  // 5-10 decided on the principal (./decisions.ts); the counters of 11 spent or read
  // A sampled request's own resolver when tracing (its spans), else the gateway's.
  const access = await (ctx.span?.access ?? deps.access).resolve(secret, V2_KEYS, ctx.ip, resolverPlan(deps, ctx));
  if (access.kind === 'cooldown') return refuseUnkeyed(deps, ctx, { code: '150006', retryAfter: access.seconds });
  if (access.kind === 'invalid') return refuseUnkeyed(deps, ctx, { code: '150002' });
  const { principal, decision, states } = access;
  ctx.trace.organizationId = principal.organizationId;
  ctx.trace.keyId = principal.keyId;
  // One reading of the clock for every field and refusal of this answer.
  const now = deps.clock.now();
  addRateLimitFields(ctx.head, limitOutcome('v2', decision, states), now);

  if (decision.kind === 'status') return rateLimitStatus(deps, ctx, principal, states);
  if (decision.kind === 'refuse') return refuse(ctx, decision.refusal);
  // 11. both layers (a token was spent in each, accepted or not), then the monthly quota, spent only
  // by a request both admitted
  const [key, ip, month] = states;
  deps.metrics.rateLimit('key', key.used > key.limit, key.remaining === 0);
  deps.metrics.rateLimit('ip', ip.used > ip.limit, ip.remaining === 0);
  const limited = rateLimitGuard(key, ip, decision.bucket, ctx.ip, now);
  // Limits and the quota refuse only where they are enforced; in shadow the refusal is logged, counted and
  // the request forwarded with the same headers (./shadow.ts).
  const enforce = limitModeOf(deps.limitMode, planOf(deps.plans(), principal.plan).plan, decision.route) === 'enforce';
  if (limited) {
    if (enforce) return refuse(ctx, limited);
    recordShadowRefusal(deps, ctx, limited, layersOver(['key', key], ['ip', ip]));
  }
  if (month) {
    deps.metrics.rateLimit('month', month.used > month.limit, month.remaining === 0);
    deps.monthSpent?.(principal.organizationId, month, now);
  }
  const exhausted = monthlyQuotaGuard(month, now);
  if (exhausted) {
    if (enforce) return refuse(ctx, exhausted);
    recordShadowRefusal(deps, ctx, exhausted, ['month']);
  }
  return forwardWithBody(deps, ctx, principal, decision.grant, decision.route);
}

/** An answer before a key is resolved (steps 1 to 4): it shows the address layer without spending. */
async function refuseUnkeyed(deps: GatewayDeps, ctx: RequestContext, refusal: Refusal): Promise<void> {
  const [ip] = await deps.stores.limiter.spend([ipCounter(ctx.ip)], 0);
  addRateLimitFields(ctx.head, { api: 'v2', key: null, ip }, deps.clock.now());
  refuse(ctx, refusal);
}

/**
 * GET {wid}/rate-limit: the plan, each bucket and the address layer, read without spending. A bucket
 * whose budget is overridden says where from (`source`: `key` or `organization`); an organization with
 * a monthly quota gets `month`.
 */
function rateLimitStatus(deps: GatewayDeps, ctx: RequestContext, principal: Principal, states: LayerState[]) {
  const ip = states[BUCKETS.length];
  const month = states[BUCKETS.length + 1];
  const layer = (s: LayerState) => ({ limit: s.limit, used: s.used, remaining: s.remaining, reset: s.reset });
  const bucketLayer = (b: Bucket, s: LayerState) => {
    const source = budgetSource(principal.limits, b);
    return source === 'plan' ? layer(s) : { ...layer(s), source };
  };
  sendJson(ctx, 200, {
    data: {
      plan: planOf(deps.plans(), principal.plan).id,
      windowSeconds: WINDOW_SECONDS,
      buckets: Object.fromEntries(BUCKETS.map((b, i) => [b, bucketLayer(b, states[i])])),
      ip: layer(ip),
      ...(month ? { month: layer(month) } : {}),
    },
    meta: { request_id: ctx.requestId, timestamp: new Date(deps.clock.now()).toISOString() },
  });
}

// The /v1 pipeline (docs/decisions.md section 4), with the guards it shares with /v2: canonical request, the
// credential (X-Api-Key), the address's cooldown and the key, the organization, the route, then one
// layer of 20 requests per key per minute. Every answer carries the three rate-limit headers.
import { WINDOW_SECONDS } from '../config/contract.js';
import { WORKSPACE_INTERFACES } from '../config/profile/workspace.js';
import { planOf } from '../config/plans.js';
import type { LayerState } from '../limits/types.js';
import type { GatewayDeps, RequestContext } from './context.js';
import { canonicalRequest } from './guards/canonical.js';
import { partnerSecret } from './guards/credential.js';
import { monthlyQuotaGuard, partnerRateLimitGuard } from './guards/rate-limit.js';
import { limitOutcome } from './decisions.js';
import { resolverPlan } from './resolver-plan.js';
import { refuse, sendJson } from './answers.js';
import type { Refusal } from './refusal.js';
import { addRateLimitFields } from './headers.js';
import { forwardWithBody } from './forward-authorized.js';
import { layersOver, limitModeOf, recordShadowRefusal } from './shadow.js';

const V1_KEYS = WORKSPACE_INTERFACES[1].keyTypes;

export async function v1(deps: GatewayDeps, ctx: RequestContext): Promise<void> {
  // Before a key is resolved the headers show an untouched bucket (docs/decisions.md).
  const unkeyed = (refusal: Refusal) => {
    addRateLimitFields(ctx.head, { api: 'v1', key: null }, deps.clock.now());
    refuse(ctx, refusal);
  };
  // 1. canonical path and framing
  const malformed = canonicalRequest(ctx.req, ctx.path, deps.bodyLimitBytes, deps.targetMaxBytes);
  if (malformed) return unkeyed(malformed);
  // 2. a key
  const secret = partnerSecret(ctx.req);
  if (!secret) return unkeyed({ code: '150001', message: 'Missing X-Api-Key header.' });
  // 3, 4, then the organization and the route (./decisions.ts), then the key's one counter
  const access = await (ctx.span?.access ?? deps.access).resolve(secret, V1_KEYS, ctx.ip, resolverPlan(deps, ctx));
  if (access.kind === 'cooldown') return unkeyed({ code: '150006', retryAfter: access.seconds });
  if (access.kind === 'invalid') return unkeyed({ code: '150002' });
  const { principal, decision, states } = access;
  ctx.trace.organizationId = principal.organizationId;
  ctx.trace.keyId = principal.keyId;
  // The key's layer, then the organization's monthly quota when it has one (spent only by a request
  // the key's layer admitted).
  addRateLimitFields(ctx.head, limitOutcome('v1', decision, states), deps.clock.now());
  const [key, month] = states;
  if (decision.kind === 'refuse') return refuse(ctx, decision.refusal);
  if (decision.kind === 'status') return rateLimitStatus(ctx, key, month);
  deps.metrics.rateLimit('v1', key.used > key.limit, key.remaining === 0);
  const limited = partnerRateLimitGuard(key, deps.clock.now());
  // The partner layer and the quota refuse only where they are enforced (./shadow.ts).
  const enforce = limitModeOf(deps.limitMode, planOf(deps.plans(), principal.plan).plan, decision.route) === 'enforce';
  if (limited) {
    if (enforce) return refuse(ctx, limited);
    recordShadowRefusal(deps, ctx, limited, layersOver(['v1', key]));
  }
  if (month) {
    deps.metrics.rateLimit('month', month.used > month.limit, month.remaining === 0);
    deps.monthSpent?.(principal.organizationId, month, deps.clock.now());
  }
  const exhausted = monthlyQuotaGuard(month, deps.clock.now());
  if (exhausted) {
    if (enforce) return refuse(ctx, exhausted);
    recordShadowRefusal(deps, ctx, exhausted, ['month']);
  }
  return forwardWithBody(deps, ctx, principal, null, decision.route);
}

/** GET /v1/rate-limit: the key's one layer, and the organization's monthly quota when it has one, read without spending. */
function rateLimitStatus(ctx: RequestContext, state: LayerState, month: LayerState | undefined) {
  const body = {
    limit: state.limit,
    used: state.used,
    remaining: state.remaining,
    reset: state.reset,
    windowSeconds: WINDOW_SECONDS,
  };
  sendJson(
    ctx,
    200,
    month
      ? { ...body, month: { limit: month.limit, used: month.used, remaining: month.remaining, reset: month.reset } }
      : body,
  );
}

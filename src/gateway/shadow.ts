// Shadow limits: a rate-limit layer or a quota in `shadow` spends its counters and sets its headers and
// metrics exactly as in enforcement, but a request it would refuse is logged, counted
// (keygate_shadow_refusals_total{layer}) and forwarded. It lets keygate stand in front of an existing
// service's traffic before it refuses anyone. Only limits: authentication and authorization refuse in
// every mode.
//
// The mode is the route's `limitMode` (ROUTES_FILE), else the plan's (PLANS_FILE), else
// RATE_LIMIT_MODE: the most specific setting wins, so one route or one plan can be tried in shadow
// while the rest enforce, or the other way round.
import type { LayerState } from '../limits/types.js';
import type { GatewayDeps, LimitMode, RequestContext } from './context.js';
import type { Refusal } from './refusal.js';

interface HasMode {
  limitMode?: LimitMode;
}

export function limitModeOf(
  global: LimitMode | undefined,
  plan: HasMode | undefined,
  route: HasMode | undefined,
): LimitMode {
  return route?.limitMode ?? plan?.limitMode ?? global ?? 'enforce';
}

/**
 * The layers that would refuse: each named state over its limit. Generic over the gate's outcome, so
 * a further layer (a quota) is one more pair.
 */
export function layersOver(...layers: [name: string, state: LayerState][]): string[] {
  const out: string[] = [];
  for (const [name, state] of layers) if (state.used > state.limit) out.push(name);
  return out;
}

/** A limit refusal that shadow turns into a forward: one log line, one count per layer that would refuse. */
export function recordShadowRefusal(deps: GatewayDeps, ctx: RequestContext, refusal: Refusal, layers: string[]): void {
  for (const layer of layers) deps.metrics.shadowRefusal(layer);
  deps.log.info(
    {
      requestId: ctx.requestId,
      method: ctx.method,
      route: ctx.trace.route,
      code: refusal.code,
      layers,
      organizationId: ctx.trace.organizationId,
      keyId: ctx.trace.keyId,
    },
    'shadow refusal: forwarded',
  );
}

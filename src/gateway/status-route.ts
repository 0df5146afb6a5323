// The rate-limit status route each interface may have (a route with `gateway: true`): the key's layers,
// read without spending, answered by the gateway itself in the interface's shape.
import type { Principal } from '../access/principal.js';
import type { Bucket } from '../config/routes.js';
import { WINDOW_SECONDS } from '../config/contract.js';
import { planOf } from '../config/plans.js';
import { budgetSource } from '../config/budgets.js';
import type { LayerState } from '../limits/types.js';
import { BUCKETS } from '../limits/counters.js';
import type { GatewayDeps, RequestContext } from './context.js';
import { sendJson } from './answers.js';

const layer = (s: LayerState) => ({ limit: s.limit, used: s.used, remaining: s.remaining, reset: s.reset });

/**
 * The status of a bucketed interface, from its counters [read, write, bulk, ip?, month?]: the plan, each
 * bucket (one whose budget is overridden says where from, `source`: `key` or `organization`), the
 * address layer and the monthly quota where there are. The workspace API's /v2 wraps it in its envelope.
 */
export function bucketsStatus(
  deps: GatewayDeps,
  ctx: RequestContext,
  principal: Principal,
  states: LayerState[],
  address: boolean,
): void {
  const ip = address ? states[BUCKETS.length] : undefined;
  const month = states[BUCKETS.length + (address ? 1 : 0)];
  const bucketLayer = (b: Bucket, s: LayerState) => {
    const source = budgetSource(principal.limits, b);
    return source === 'plan' ? layer(s) : { ...layer(s), source };
  };
  const data = {
    plan: planOf(deps.plans(), principal.plan).id,
    windowSeconds: WINDOW_SECONDS,
    buckets: Object.fromEntries(BUCKETS.map((b, i) => [b, bucketLayer(b, states[i])])),
    ...(ip ? { ip: layer(ip) } : {}),
    ...(month ? { month: layer(month) } : {}),
  };
  if (ctx.iface.spec.model !== 'workspace-v2') return sendJson(ctx, 200, data);
  sendJson(ctx, 200, {
    data,
    meta: { request_id: ctx.requestId, timestamp: new Date(deps.clock.now()).toISOString() },
  });
}

/** GET /v1/rate-limit: the key's one layer, and the organization's monthly quota when it has one. */
export function singleLayerStatus(ctx: RequestContext, states: LayerState[]): void {
  const [state, month] = states;
  const body = { ...layer(state), windowSeconds: WINDOW_SECONDS };
  sendJson(ctx, 200, month ? { ...body, month: layer(month) } : body);
}

// What the access resolver calls once it knows the principal: the pure decision of steps 5 to 10
// (./decisions.ts), with the two things it cannot know. Whether the body has room now (./body-budget.ts),
// and the request's route, noted for the metrics and the access log as soon as it is known: also when
// the limiter then fails and the answer is a 503.
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../access/principal.js';
import type { CounterPlan } from '../access/resolver.js';
import type { GatewayDeps, RequestContext } from './context.js';
import { refusedInstead, type Decision, type Policy } from './decisions.js';
import { bodyRoomRefusal, type BodyBudget, type BodyOwner } from './body-budget.js';

export function resolverPlan(deps: GatewayDeps, ctx: RequestContext) {
  const { iface } = ctx;
  const policy = policyOf(deps, ctx);
  return (principal: Principal): { decision: Decision; counters: CounterPlan } => {
    const decided = iface.decide(principal, ctx, policy);
    // A body there is no room for now is refused before any token is spent.
    const decision = withBodyRoom(deps.bodyBudget, { key: String(principal.keyId), address: ctx.ip }, ctx.req, decided);
    if (decision.route) ctx.trace.route = decision.route.path;
    return { decision, counters: decision.counters };
  };
}

/** An admitted request whose body has no room now is refused instead, its counters read, not spent. */
export function withBodyRoom(budget: BodyBudget, owner: BodyOwner, req: IncomingMessage, decision: Decision): Decision {
  if (decision.kind !== 'admit') return decision;
  const noRoom = bodyRoomRefusal(budget, owner, req);
  return noRoom ? refusedInstead(decision, noRoom) : decision;
}

/** The route table, plans and layers a request of this interface is decided with. */
export function policyOf(deps: GatewayDeps, ctx: RequestContext): Policy {
  const { spec } = ctx.iface;
  return {
    routes: deps.routes().tables[spec.id],
    plans: deps.plans(),
    addressLimit: spec.addressLimit,
    keyLimit: spec.keyLimit,
  };
}

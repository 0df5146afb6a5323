// What the gateway decides about a resolved key without any I/O (docs/decisions.md sections 3 and 4):
// from the principal, the request's method and path, the route table and the plans, either the refusal
// that answers (steps 5 to 10) or the route admitted, with the counters step 11 spends. The rules are the
// guards' (./guards/); this file is their order, for each interface. Pure: no clock, no store, no
// context written, so a table of rows can prove every outcome (test/gateway/decisions.test.ts).
//
// Counters always travel key first, then the address where the interface has that layer, then the
// organization's monthly quota when it has one: [key bucket, ip?, month?] spent or read, or for a status
// route [read, write, bulk, ip?, month?] read; /v1: [partner, month?]. `limitOutcome` reads the states
// back in the same order.
import type { Principal } from '../access/principal.js';
import type { Bucket, RouteDef, RouteMatch, RouteTable } from '../config/routes.js';
import type { Plans } from '../config/plans.js';
import { budgetOf, monthlyQuotaOf } from '../config/budgets.js';
import type { CounterRef, LayerState } from '../limits/types.js';
import type { LimitOutcome } from './headers.js';
import type { Refusal } from './refusal.js';
import { organizationGuard } from './guards/organization.js';
import { routeGuard } from './guards/route.js';
import { permissionGuard, scopeGuard, type Granted } from './guards/permission.js';
import { BUCKETS, ipCounter, keyCounter, monthCounter, partnerCounter } from '../limits/counters.js';

/** The facts of a request the decisions read. */
export interface RequestFacts {
  method: string;
  /** The path of the target, without its query (canonical by step 1). */
  path: string;
  /** The client address (its layer's counter). */
  ip: string;
}

/** The route table and plans in force for this request, and its interface's layers (docs/profiles.md). */
export interface Policy {
  routes: RouteTable;
  plans: Plans;
  /** Requests per minute per client address; null: no address layer. Absent: the workspace API's 100. */
  addressLimit?: number | null;
  /** The one per-key layer of an interface without buckets; absent: the workspace API's /v1 20. */
  keyLimit?: number | null;
}

/**
 * `route` is the matched route when the decision got that far (the metrics' and access log's label);
 * `bucket` the key's bucket whose headers the answer carries (/v1 has one layer and ignores it).
 */
export type Decision =
  | { kind: 'refuse'; refusal: Refusal; route: RouteDef | null; bucket: Bucket; counters: { peek: CounterRef[] } }
  /** The rate-limit status route, answered by the gateway itself from counters read, not spent. */
  | { kind: 'status'; route: RouteDef; bucket: Bucket; counters: { peek: CounterRef[] } }
  | { kind: 'admit'; route: RouteDef; bucket: Bucket; grant: Granted | null; counters: { spend: CounterRef[] } };

export type Admit = Extract<Decision, { kind: 'admit' }>;

/** Without a matched route, the bucket of the method (read for GET and HEAD, write for the others). */
const bucketOf = (method: string): Bucket => (method === 'GET' || method === 'HEAD' ? 'read' : 'write');

/** Steps 5 to 10 of /v2 for a principal, and the counters of step 11. */
export function decideV2(principal: Principal, request: RequestFacts, policy: Policy): Decision {
  return decideBucketed(principal, request, policy, permissionGuard);
}

/**
 * A consumer (docs/profiles.md, kind `rest`): the organization guard, the route, its scope, then the
 * key's bucket, the address layer where the interface has one, and the monthly quota.
 */
export function decideConsumer(principal: Principal, request: RequestFacts, policy: Policy): Decision {
  return decideBucketed(principal, request, policy, scopeGuard);
}

/** The key's bucket, the address and the month, after the organization, the route and `authorize`. */
function decideBucketed(
  principal: Principal,
  request: RequestFacts,
  { routes, plans, addressLimit }: Policy,
  authorize: (p: Principal, match: RouteMatch) => Refusal | Granted,
): Decision {
  const ip = addressLimit === null ? undefined : ipCounter(request.ip, addressLimit);
  const month = monthCounter(principal.organizationId, monthlyQuotaOf(plans, principal.plan, principal.limits));
  const withMonth = (refs: CounterRef[]) => {
    if (ip) refs.push(ip);
    if (month) refs.push(month);
    return refs;
  };
  const keyOf = (bucket: Bucket) =>
    keyCounter(principal.keyId, bucket, budgetOf(plans, principal.plan, principal.limits, bucket));
  // Step 7 comes after 5 and 6, but the headers of a 5 or 6 refusal name the route's bucket.
  const match = routeGuard(routes, request.method, request.path);
  const route = 'code' in match ? null : match.route;
  const bucket = route?.bucket ?? bucketOf(request.method);
  const refuse = (refusal: Refusal): Decision => ({
    kind: 'refuse',
    refusal,
    route,
    bucket,
    counters: { peek: withMonth([keyOf(bucket)]) },
  });
  // 5, 6
  const orgRefusal = organizationGuard(principal);
  if (orgRefusal) return refuse(orgRefusal);
  // 7
  if ('code' in match) return refuse(match);
  // 8, 9, 10
  const grant = authorize(principal, match);
  if ('code' in grant) return refuse(grant);
  // The rate-limit route is answered by the gateway itself, spending nothing.
  if (match.route.gateway)
    return {
      kind: 'status',
      route: match.route,
      bucket: 'read',
      counters: { peek: withMonth(BUCKETS.map(keyOf)) },
    };
  return { kind: 'admit', route: match.route, bucket, grant, counters: { spend: withMonth([keyOf(bucket)]) } };
}

/** /v1 (section 4): the organization, the route, then the partner key's one counter. */
export function decideV1(principal: Principal, request: RequestFacts, { routes, plans, keyLimit }: Policy): Decision {
  const month = monthCounter(principal.organizationId, monthlyQuotaOf(plans, principal.plan, principal.limits));
  const key = partnerCounter(principal.keyId, keyLimit ?? undefined);
  const counters = month ? [key, month] : [key];
  const bucket = bucketOf(request.method);
  const orgRefusal = organizationGuard(principal);
  if (orgRefusal) return { kind: 'refuse', refusal: orgRefusal, route: null, bucket, counters: { peek: counters } };
  const match = routeGuard(routes, request.method, request.path);
  if ('code' in match) return { kind: 'refuse', refusal: match, route: null, bucket, counters: { peek: counters } };
  if (match.route.gateway) return { kind: 'status', route: match.route, bucket, counters: { peek: counters } };
  return { kind: 'admit', route: match.route, bucket, grant: null, counters: { spend: counters } };
}

/** An admitted request refused after all (no room for its body now): its counters are read, not spent. */
export function refusedInstead(admit: Admit, refusal: Refusal): Decision {
  return {
    kind: 'refuse',
    refusal,
    route: admit.route,
    bucket: admit.bucket,
    counters: { peek: admit.counters.spend },
  };
}

/** The layers of an interface, as its answers report them. */
export interface Layers {
  /** The interface has an address layer (its counter follows the key's). */
  address: boolean;
  /** The policy name of an interface's one per-key layer (`partner` on /v1); null: the plan's buckets. */
  single: string | null;
}

/**
 * The layers a decision's counters came back as, for the answer's rate-limit fields (./headers.ts): the
 * key's first, then the address's when the interface has that layer, then the month's. The status route
 * of a bucketed interface read every bucket: its fields report the read bucket, the first of them.
 */
export function limitOutcome(layers: Layers, decision: Decision, states: LayerState[]): LimitOutcome {
  const status = layers.single === null && decision.kind === 'status';
  const next = status ? BUCKETS.length : 1;
  return {
    key: states[0],
    policy: layers.single ?? (status ? 'read' : decision.bucket),
    ip: layers.address ? states[next] : null,
    month: states[layers.address ? next + 1 : next],
  };
}

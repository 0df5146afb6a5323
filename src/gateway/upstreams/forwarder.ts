// One service's forwarder: its targets (./types.ts TargetSet) chosen per try, a pool per target
// (./pools.ts), its retry budget (./retry-budget.ts) and its timeouts, each within the global bound
// (UPSTREAM_TIMEOUT_MS). The forwarding itself, tries and deadlines, is ../upstream-client.ts's.
import type { ServiceConfig } from '../../config/services.js';
import { forwardOver, type Forwarder } from '../upstream-client.js';
import { TargetPools } from './pools.js';
import { RetryBudget } from './retry-budget.js';
import type { TargetSet, UpstreamEvents } from './types.js';

export interface ServiceForwarderOptions {
  /** UPSTREAM_TIMEOUT_MS: every bound is at most this, and a request's tries all end within it. */
  timeoutMs: number;
  /** UPSTREAM_MAX_SOCKETS: connections over all of the service's pools. */
  maxSockets: number;
  /** CORS is on: the Access-Control-* response fields are the gateway's, not the upstream's. */
  ownCors?: boolean;
  /** Seconds from handing the request over to the response head (its tries included). */
  observe?(seconds: number): void;
  events: UpstreamEvents;
  /** UPSTREAM_CLIENT: the pools' HTTP client (./pools.ts). */
  client?: 'undici' | 'lean';
}

export function createServiceForwarder(
  service: ServiceConfig,
  targets: TargetSet,
  o: ServiceForwarderOptions,
): Forwarder {
  const within = (ms: number | undefined) => Math.min(ms ?? o.timeoutMs, o.timeoutMs);
  const connectMs = within(service.timeouts.connectMs);
  const pools = new TargetPools(
    { maxSockets: o.maxSockets, connectTimeoutMs: connectMs, client: o.client },
    targets.all().length,
  );
  // A target gone closes its pool once its requests are done; one come gets a pool at its first request.
  targets.onChange(() => pools.follow(targets.all()));
  return forwardOver({
    service: service.name,
    targets,
    pools,
    budget: new RetryBudget(service.retries.budgetPercent, service.retries.minConcurrent),
    events: o.events,
    retries: service.retries.attempts,
    timeoutMs: o.timeoutMs,
    headMs: within(service.timeouts.headMs),
    idleMs: within(service.timeouts.idleMs),
    connectMs,
    preserveHost: service.preserveHost,
    ownCors: o.ownCors === true,
    observe: o.observe,
  });
}

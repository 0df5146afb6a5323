// The services of the configuration in force, each with its targets and forwarder (./types.ts
// ServiceUpstream). A route carries its service's configuration object; a request asks for the
// upstream of that very object, so a reload never mixes two configurations in one request: a request
// matched before the reload is forwarded by the configuration it matched under. A reload keeps the
// upstream of a service whose configuration did not change (its pools and health state with it),
// starts the new ones at once (DNS and probes before any traffic), and retires the replaced ones once
// no request that matched them can still be waiting to be forwarded.
import type { Logger } from 'pino';
import {
  DEFAULT_SERVICE,
  implicitDefaultService,
  sameService,
  withUpstream,
  type ServiceConfig,
} from '../../config/services.js';
import type { Clock } from '../../ops/clock.js';
import type { ServiceHealth, UpstreamMetrics } from '../../ops/upstream-metrics.js';
import { createServiceForwarder } from './forwarder.js';
import { createTargetSet } from './targets.js';
import type { Resolve } from './dns.js';
import type { ServiceUpstream, UpstreamEvents } from './types.js';

export interface UpstreamsOptions {
  /** The implicit default service's one target: UPSTREAM_URL, or the in-process backend in all-in-one. */
  upstream: string;
  /** UPSTREAM_TIMEOUT_MS. */
  timeoutMs: number;
  /** UPSTREAM_MAX_SOCKETS, per service. */
  maxSockets: number;
  ownCors: boolean;
  /** A replaced service closes this long after the reload: past any request matched before it. */
  retireAfterMs: number;
  clock: Clock;
  log: Logger;
  metrics: UpstreamMetrics;
  observe?(seconds: number): void;
  /** Host names to addresses (UPSTREAM_DNS_SERVER, or the system's resolver). */
  resolve?: Resolve;
  /** UPSTREAM_CLIENT: the pools' HTTP client (./pools.ts). */
  client?: 'undici' | 'lean';
}

export class Upstreams {
  private readonly byConfig = new WeakMap<ServiceConfig, ServiceUpstream>();
  private readonly byName = new Map<string, ServiceUpstream>();
  private readonly retiring = new Set<NodeJS.Timeout>();
  private readonly events: UpstreamEvents;
  private closed = false;

  constructor(private readonly o: UpstreamsOptions) {
    this.events = upstreamEvents(o.log, o.metrics);
    o.metrics.healthFrom(() => this.health());
  }

  /** The upstream of a route's service (the default one when the route names none). */
  of(service: ServiceConfig | undefined): ServiceUpstream {
    if (service === undefined) return this.byName.get(DEFAULT_SERVICE) ?? this.adopt(implicitDefaultService());
    return this.byConfig.get(service) ?? this.adopt(service);
  }

  /** The services of a configuration now in force (at start and after each reload). */
  sync(services: ReadonlyMap<string, ServiceConfig>): void {
    if (this.closed) return;
    for (const config of services.values()) this.adopt(config);
    for (const [name, upstream] of this.byName) {
      if (services.has(name)) continue;
      this.byName.delete(name);
      this.retire(upstream);
    }
  }

  /** True when the configuration in force defines services (more than the implicit upstream). */
  configured(): boolean {
    for (const u of this.byName.values()) if (!u.config.implicit) return true;
    return false;
  }

  /** Per service, its admitted targets and all of them (/readyz, metrics). */
  health(): ServiceHealth[] {
    return [...this.byName.values()].map((u) => ({
      service: u.config.name,
      healthy: u.targets.healthyCount(),
      targets: u.targets.all().length,
    }));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.retiring) clearTimeout(t);
    this.retiring.clear();
    const all = [...this.byName.values()];
    this.byName.clear();
    await Promise.all(all.map((u) => this.stop(u)));
  }

  /** The upstream for this configuration object: the running one when unchanged, else a new one replacing it. */
  private adopt(config: ServiceConfig): ServiceUpstream {
    const known = this.byConfig.get(config);
    if (known) return known;
    const effective = withUpstream(config, this.o.upstream);
    const running = this.byName.get(config.name);
    if (running && sameService(running.config, effective)) {
      this.byConfig.set(config, running);
      return running;
    }
    const upstream = this.start(effective);
    this.byConfig.set(config, upstream);
    if (!this.closed) {
      this.byName.set(config.name, upstream);
      if (running) this.retire(running);
    }
    return upstream;
  }

  private start(config: ServiceConfig): ServiceUpstream {
    const targets = createTargetSet(config, { clock: this.o.clock, events: this.events, resolve: this.o.resolve });
    const forwarder = createServiceForwarder(config, targets, {
      timeoutMs: this.o.timeoutMs,
      maxSockets: this.o.maxSockets,
      ownCors: this.o.ownCors,
      observe: this.o.observe,
      events: this.events,
      client: this.o.client,
    });
    targets.start();
    return { config, targets, forwarder };
  }

  private retire(upstream: ServiceUpstream): void {
    const timer = setTimeout(() => {
      this.retiring.delete(timer);
      void this.stop(upstream);
    }, this.o.retireAfterMs).unref();
    this.retiring.add(timer);
  }

  private async stop(upstream: ServiceUpstream): Promise<void> {
    upstream.targets.close();
    await upstream.forwarder.close().catch(() => {});
  }
}

/** Ejections and returns are logged once each; everything is counted per service and target. */
function upstreamEvents(log: Logger, metrics: UpstreamMetrics): UpstreamEvents {
  const lastResolution = new Map<string, string>();
  return {
    ejected(service, target, reason, forMs) {
      log.warn({ service, target, reason, forMs }, 'upstream target ejected');
      metrics.targetEjected(service, target, reason);
    },
    readmitted(service, target, reason) {
      log.info({ service, target, reason }, 'upstream target admitted again');
      metrics.targetReadmitted(service, target, reason);
    },
    retried(service, cause) {
      metrics.retry(service, cause);
    },
    budgetExhausted(service) {
      metrics.retryBudgetExhausted(service);
    },
    attempt(service, target, result) {
      if (result !== 'ok') metrics.attemptFailed(service, target, result);
    },
    resolved(service, host, addresses, error) {
      // A name that keeps failing is said once, not at every refresh.
      const said = error ? `error ${error}` : addresses.join(',');
      const key = `${service} ${host}`;
      if (lastResolution.get(key) === said) return;
      lastResolution.set(key, said);
      if (error)
        log.warn({ service, host, err: error, addresses }, 'upstream name not resolved; its last addresses stay');
      else log.info({ service, host, addresses }, 'upstream name resolved');
    },
  };
}

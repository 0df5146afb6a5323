// The series of the services behind the gateway (src/gateway/upstreams/): ejections and returns of
// targets, failed tries, retries and the retry budget, and the admitted targets per service at each
// scrape. Labels are service names and target addresses from the configuration and DNS: bounded by
// them, never by requests.
import { Counter, Gauge, type Registry } from 'prom-client';

export interface ServiceHealth {
  service: string;
  healthy: number;
  targets: number;
}

export interface UpstreamMetrics {
  targetEjected(service: string, target: string, reason: string): void;
  targetReadmitted(service: string, target: string, reason: string): void;
  /** A try that failed (an answered try is not counted here: keygate_requests_total has it). */
  attemptFailed(service: string, target: string, result: string): void;
  retry(service: string, cause: string): void;
  retryBudgetExhausted(service: string): void;
  /** Read at each scrape. */
  healthFrom(source: () => ServiceHealth[]): void;
}

export function upstreamSeries(registry: Registry): UpstreamMetrics {
  const ejections = new Counter({
    name: 'keygate_upstream_ejections_total',
    help: 'Targets taken out of their service by passive health (reason=passive) or the active probe (reason=probe).',
    labelNames: ['service', 'target', 'reason'],
    registers: [registry],
  });
  const returns = new Counter({
    name: 'keygate_upstream_readmissions_total',
    help: 'Targets admitted again after an ejection, by what ejected them.',
    labelNames: ['service', 'target', 'reason'],
    registers: [registry],
  });
  const failures = new Counter({
    name: 'keygate_upstream_attempt_failures_total',
    help: 'Tries on a target that failed: connect_failure, reset, timeout or status_5xx.',
    labelNames: ['service', 'target', 'result'],
    registers: [registry],
  });
  const retries = new Counter({
    name: 'keygate_upstream_retries_total',
    help: 'Requests tried again on another target: not_sent (nothing reached the target) or sent (idempotent).',
    labelNames: ['service', 'cause'],
    registers: [registry],
  });
  const budget = new Counter({
    name: 'keygate_upstream_retry_budget_exhausted_total',
    help: "Retries not made because the service's retry budget was spent.",
    labelNames: ['service'],
    registers: [registry],
  });
  let source: () => ServiceHealth[] = () => [];
  const healthy = new Gauge({
    name: 'keygate_upstream_healthy_targets',
    help: 'Targets of each service admitted now (not ejected).',
    labelNames: ['service'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of source()) this.set({ service: s.service }, s.healthy);
    },
  });
  const all = new Gauge({
    name: 'keygate_upstream_targets',
    help: 'Targets of each service now (configured, or resolved from DNS).',
    labelNames: ['service'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of source()) this.set({ service: s.service }, s.targets);
    },
  });
  void healthy;
  void all;
  return {
    targetEjected: (service, target, reason) => ejections.inc({ service, target, reason }),
    targetReadmitted: (service, target, reason) => returns.inc({ service, target, reason }),
    attemptFailed: (service, target, result) => failures.inc({ service, target, result }),
    retry: (service, cause) => retries.inc({ service, cause }),
    retryBudgetExhausted: (service) => budget.inc({ service }),
    healthFrom(fn) {
      source = fn;
    },
  };
}

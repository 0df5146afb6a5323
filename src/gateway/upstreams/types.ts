// The parts that choose where a request goes, as the forwarder and the registry see them. One service
// (src/config/services.ts) has one TargetSet (./targets.ts: its addresses, balancing and health) and
// one forwarder (./forwarder.ts: pools per target, retries, timeouts); ./registry.ts keeps them per
// configuration across reloads.
import type { ServiceConfig } from '../../config/services.js';
import type { Forwarder } from '../upstream-client.js';

/** How one try on a target ended, as passive health counts it. */
export type AttemptResult =
  /** An answer below 500 (or a 5xx the service meant: still an answer, see `status_5xx`). */
  | 'ok'
  /** Refused, unreachable, or no connection within the connect timeout: nothing was sent. */
  | 'connect_failure'
  /** The connection broke before the answer's head. */
  | 'reset'
  /** No head within the head timeout. */
  | 'timeout'
  /** An answer 500 to 599. */
  | 'status_5xx';

/** One address of a service. A host-name target gives one per address it resolves to. */
export interface Target {
  /** Unique within its service: `address:port` (or the URL's authority when not resolved). */
  readonly key: string;
  /** Where to connect: `http://10.0.0.5:9000`. */
  readonly origin: string;
  /** The Host (and TLS server name) to send: the configured URL's authority, not the address. */
  readonly authority: string;
  /** The configured URL's path without its trailing slash ('' for none): put in front of the request's. */
  readonly basePath: string;
  readonly weight: number;
  /** Requests in flight on it, kept by the forwarder (begin/end): least-request reads it. */
  outstanding: number;
}

export interface TargetHealth {
  key: string;
  healthy: boolean;
  /** Until when it is ejected (epoch ms), or null. */
  ejectedUntil: number | null;
  outstanding: number;
}

export interface TargetSet {
  readonly service: string;
  /**
   * A healthy target by the service's balancing, avoiding those in `tried` when another is healthy;
   * null when the service has no target at all. When every target is ejected, one is still chosen
   * (a request on a sick target beats a certain refusal): see ./health.ts.
   */
  pick(tried?: ReadonlySet<Target>): Target | null;
  /** Every target now, healthy or not (the forwarder's pools follow it). */
  all(): readonly Target[];
  /** Targets now admitted (not ejected by passive or active health). */
  healthyCount(): number;
  report(target: Target, result: AttemptResult): void;
  health(): TargetHealth[];
  /** Called when targets appear or go (a DNS answer changed): the forwarder closes pools of gone ones. */
  onChange(listener: () => void): void;
  /** Starts DNS refresh and the active probe (timers, unref'd). */
  start(): void;
  close(): void;
}

/** What the metrics and the log hear from a service's targets. */
export interface UpstreamEvents {
  ejected(service: string, target: string, reason: 'passive' | 'probe', forMs: number | null): void;
  readmitted(service: string, target: string, reason: 'passive' | 'probe'): void;
  retried(service: string, cause: 'not_sent' | 'sent'): void;
  /** A retry skipped because the service's retry budget was spent. */
  budgetExhausted(service: string): void;
  attempt(service: string, target: string, result: AttemptResult): void;
  /** A host name's addresses changed (or failed to resolve: `error`). */
  resolved(service: string, host: string, addresses: string[], error?: string): void;
}

export interface ServiceUpstream {
  readonly config: ServiceConfig;
  readonly targets: TargetSet;
  readonly forwarder: Forwarder;
}

// A target's health as two independent verdicts, as Envoy keeps them: passive (outlier detection: the
// results of real requests) and active (the probe's answers). A target is admitted when neither has
// put it out; when none of a service's targets is admitted the balancer chooses among all of them
// (Envoy's panic mode: a request on a sick target beats a certain refusal).
import type { ServiceConfig } from '../../config/services.js';
import type { AttemptResult, Target } from './types.js';

type Passive = ServiceConfig['passive'];
type Probe = NonNullable<ServiceConfig['probe']>;

/** One target and its health state: the object the forwarder holds is this one. */
export class TargetEntry implements Target {
  outstanding = 0;
  /** Failed results in a row (passive). */
  failures = 0;
  /** Passive ejection's end (the set's clock), or null when not ejected. */
  ejectedUntil: number | null = null;
  /** Ejections in a row: the next ejection lasts this many times the base (after decay). */
  ejections = 0;
  /** When the last passive ejection ended: healthy time since then decays `ejections`. */
  readmittedAt = 0;
  /** Put out by the probe. */
  probeDown = false;
  probeFails = 0;
  probePasses = 0;
  /** A probe of it is in flight: the next round skips it rather than pile up. */
  probing = false;
  /** False once a DNS answer dropped it: its late reports change nothing. */
  live = true;

  constructor(
    /** The set it belongs to: a report carrying another set's target is ignored. */
    readonly owner: object,
    readonly key: string,
    readonly origin: string,
    readonly authority: string,
    readonly basePath: string,
    readonly weight: number,
    /** Index of the configured URL it comes from. */
    readonly source: number,
  ) {}

  get admitted(): boolean {
    return this.ejectedUntil === null && !this.probeDown;
  }
}

/** The results passive health counts against a target; `ok` ends a run of them. */
export function isFailure(result: AttemptResult): boolean {
  return result !== 'ok';
}

/** How many of `total` targets may be ejected at once: the share, and always one left. */
export function maxEjectable(total: number, cfg: Passive): number {
  return Math.min(Math.floor((total * cfg.maxEjectedPercent) / 100), total - 1);
}

/**
 * Counts one passive result. True when the run of failures now calls for an ejection (the caller
 * checks the service's share first, and calls `eject` if it may).
 */
export function countResult(e: TargetEntry, result: AttemptResult, cfg: Passive): boolean {
  if (!isFailure(result)) {
    e.failures = 0;
    return false;
  }
  e.failures++;
  return e.ejectedUntil === null && e.failures >= cfg.consecutiveFailures;
}

/**
 * Ejects for the base time times the ejections in a row, at most the maximum; returns the length.
 * Each base time healthy since the last ejection ended takes one off the multiplier (Envoy decrements
 * it per healthy interval), so a target that failed once long ago starts again at the base.
 */
export function eject(e: TargetEntry, now: number, cfg: Passive): number {
  if (e.ejections > 0) {
    const healthy = Math.floor((now - e.readmittedAt) / cfg.baseEjectionMs);
    e.ejections = Math.max(0, e.ejections - healthy);
  }
  e.ejections++;
  const forMs = Math.min(cfg.baseEjectionMs * e.ejections, cfg.maxEjectionMs);
  e.ejectedUntil = now + forMs;
  e.failures = 0;
  // Passes of the probe count from the ejection on: see `probeEndsEjection`.
  e.probePasses = 0;
  return forMs;
}

/** Ends an ejection whose time is up; true if it did. */
export function readmitIfDue(e: TargetEntry, now: number): boolean {
  if (e.ejectedUntil === null || e.ejectedUntil > now) return false;
  e.ejectedUntil = null;
  e.failures = 0;
  e.readmittedAt = now;
  return true;
}

/**
 * A passive ejection ends early once the probe passed its healthy threshold since it began (Envoy's
 * successful_active_health_check_uneject_host): the target recovered, and waiting out the ejection
 * would leave a service short of a replica the probe knows is back.
 */
export function probeEndsEjection(e: TargetEntry, now: number, cfg: Probe): boolean {
  if (e.ejectedUntil === null || e.probeDown || e.probePasses < cfg.healthyThreshold) return false;
  e.ejectedUntil = now;
  return readmitIfDue(e, now);
}

/** Counts one probe answer; returns the transition it makes, if any. */
export function probeResult(e: TargetEntry, pass: boolean, cfg: Probe): 'down' | 'up' | null {
  if (pass) {
    e.probeFails = 0;
    e.probePasses++;
    if (e.probeDown && e.probePasses >= cfg.healthyThreshold) {
      e.probeDown = false;
      return 'up';
    }
    return null;
  }
  e.probePasses = 0;
  e.probeFails++;
  if (!e.probeDown && e.probeFails >= cfg.unhealthyThreshold) {
    e.probeDown = true;
    return 'down';
  }
  return null;
}

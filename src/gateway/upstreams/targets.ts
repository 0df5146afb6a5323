// A service's targets: its configured URLs made addresses (./dns.ts), the choice among them
// (./balancer.ts) and their health (./health.ts, ./probe.ts). One set per service and configuration;
// the registry keeps it across reloads that leave the service unchanged, so health is not forgotten.
import type { ServiceConfig } from '../../config/services.js';
import type { Clock } from '../../ops/clock.js';
import { Balancer } from './balancer.js';
import {
  keyFor,
  normalizeAddresses,
  originFor,
  parseTarget,
  resolverFor,
  type ParsedTarget,
  type Resolve,
} from './dns.js';
import {
  TargetEntry,
  countResult,
  eject,
  maxEjectable,
  probeEndsEjection,
  probeResult,
  readmitIfDue,
} from './health.js';
import { Prober, httpProbe, type ProbeFn } from './probe.js';
import type { AttemptResult, Target, TargetHealth, TargetSet, UpstreamEvents } from './types.js';

export interface TargetSetDeps {
  clock: Clock;
  events: UpstreamEvents;
  /** Host name to addresses; default the system's resolver (./dns.ts resolverFor). */
  resolve?: Resolve;
  /** [0, 1); default Math.random. */
  random?: () => number;
  /** The active probe of one target; default ./probe.ts httpProbe. */
  probe?: ProbeFn;
}

/** A host name is looked up again after a connect failure, but not sooner than this after its last lookup. */
const LOOKUP_DEBOUNCE_MS = 1000;

/** One configured URL and the targets it gives now. */
interface Source {
  readonly index: number;
  readonly parsed: ParsedTarget;
  readonly weight: number;
  /** The last answer (sorted); null before the first, when the URL itself is the target. */
  addresses: string[] | null;
  entries: TargetEntry[];
  resolving: boolean;
  lastLookupAt: number;
  /** A lookup asked for by a connect failure, waiting out the debounce. */
  soon: NodeJS.Timeout | null;
}

export function createTargetSet(config: ServiceConfig, deps: TargetSetDeps): TargetSet {
  return new ServiceTargets(config, deps);
}

class ServiceTargets implements TargetSet {
  readonly service: string;
  private readonly sources: Source[] = [];
  private entries: TargetEntry[] = [];
  private readonly admitted: Balancer<TargetEntry>;
  /** The panic mode's list: every target, when none is admitted. */
  private readonly everyone: Balancer<TargetEntry>;
  private nextReadmitAt = Infinity;
  private readmitTimer: NodeJS.Timeout | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private readonly prober: Prober<TargetEntry> | null;
  private readonly probeAbort = new AbortController();
  private readonly listeners: (() => void)[] = [];
  private readonly resolve: Resolve;
  private started = false;
  private closed = false;

  constructor(
    private readonly config: ServiceConfig,
    private readonly deps: TargetSetDeps,
  ) {
    this.service = config.name;
    this.resolve = deps.resolve ?? resolverFor();
    const random = deps.random ?? Math.random;
    this.admitted = new Balancer(config.balance, random);
    this.everyone = new Balancer(config.balance, random);
    config.targets.forEach((t, index) => {
      const parsed = parseTarget(t.url);
      const source: Source = {
        index,
        parsed,
        weight: t.weight,
        addresses: null,
        entries: [],
        resolving: false,
        lastLookupAt: -Infinity,
        soon: null,
      };
      this.sources.push(source);
      source.entries = [this.entry(source, parsed.hostname)];
    });
    const probe = config.probe;
    this.prober = probe
      ? new Prober(
          probe,
          deps.probe ?? httpProbe(this.probeAbort.signal),
          () => this.entries,
          (e, pass) => this.probed(e, pass),
        )
      : null;
    this.rebuild();
  }

  pick(tried?: ReadonlySet<Target>): Target | null {
    const n = this.entries.length;
    if (n <= 1) return n === 1 ? this.entries[0] : null;
    if (this.nextReadmitAt !== Infinity && this.deps.clock.now() >= this.nextReadmitAt) this.readmitDue();
    const avoid = tried as ReadonlySet<TargetEntry> | undefined;
    return this.admitted.size > 0 ? this.admitted.pick(avoid) : this.everyone.pick(avoid);
  }

  all(): readonly Target[] {
    return this.entries;
  }

  healthyCount(): number {
    this.checkReadmit();
    return this.admitted.size;
  }

  health(): TargetHealth[] {
    this.checkReadmit();
    return this.entries.map((e) => ({
      key: e.key,
      healthy: e.admitted,
      ejectedUntil: e.ejectedUntil,
      outstanding: e.outstanding,
    }));
  }

  report(target: Target, result: AttemptResult): void {
    // The forwarder tells events.attempt itself; this counts the result against the target's health.
    if (!(target instanceof TargetEntry) || target.owner !== this || !target.live || this.closed) return;
    this.checkReadmit();
    if (result === 'connect_failure') this.lookupSoon(this.sources[target.source]);
    const passive = this.config.passive;
    if (!countResult(target, result, passive)) return;
    const ejected = this.entries.reduce((n, e) => n + (e.ejectedUntil === null ? 0 : 1), 0);
    // Over the service's share the ejection is skipped; the run goes on, so the next failure asks again.
    if (ejected + 1 > maxEjectable(this.entries.length, passive)) return;
    const forMs = eject(target, this.deps.clock.now(), passive);
    this.deps.events.ejected(this.service, target.key, 'passive', forMs);
    this.admissionChanged();
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    const hosts = this.sources.filter((s) => !s.parsed.literal);
    if (hosts.length > 0) {
      for (const s of hosts) this.lookup(s);
      this.refreshTimer = setInterval(() => {
        for (const s of hosts) this.lookup(s);
      }, this.config.dns.refreshSeconds * 1000);
      this.refreshTimer.unref();
    }
    this.prober?.start();
    this.armReadmitTimer();
  }

  close(): void {
    this.closed = true;
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    if (this.readmitTimer) clearTimeout(this.readmitTimer);
    this.refreshTimer = this.readmitTimer = null;
    for (const s of this.sources) {
      if (s.soon) clearTimeout(s.soon);
      s.soon = null;
    }
    this.prober?.close();
    this.probeAbort.abort();
  }

  /** A target of `source` at `address` (its host name itself before the first answer). */
  private entry(source: Source, address: string): TargetEntry {
    const p = source.parsed;
    let key = keyFor(address, p.port);
    // Two configured URLs may reach one address (or be the same URL): their targets stay apart.
    if (this.sources.some((s) => s !== source && s.entries.some((e) => e.key === key))) key += `#${source.index + 1}`;
    return new TargetEntry(this, key, originFor(p, address), p.authority, p.basePath, source.weight, source.index);
  }

  private rebuild(): void {
    this.entries = this.sources.flatMap((s) => s.entries);
    this.everyone.set(this.entries);
    this.admissionChanged();
  }

  /** After an ejection or a return: the admitted list, the next return due, its timer. */
  private admissionChanged(): void {
    this.admitted.set(this.entries.filter((e) => e.admitted));
    let next = Infinity;
    for (const e of this.entries) if (e.ejectedUntil !== null && e.ejectedUntil < next) next = e.ejectedUntil;
    this.nextReadmitAt = next;
    this.armReadmitTimer();
  }

  private checkReadmit(): void {
    if (this.deps.clock.now() >= this.nextReadmitAt) this.readmitDue();
  }

  private readmitDue(): void {
    const now = this.deps.clock.now();
    for (const e of this.entries) {
      if (readmitIfDue(e, now)) this.deps.events.readmitted(this.service, e.key, 'passive');
    }
    this.admissionChanged();
  }

  // Returns are also checked on every pick and report; the timer tells the metrics and the log of a
  // return on a service that has no traffic.
  private armReadmitTimer(): void {
    if (this.readmitTimer) clearTimeout(this.readmitTimer);
    this.readmitTimer = null;
    if (!this.started || this.closed || this.nextReadmitAt === Infinity) return;
    const wait = Math.max(0, this.nextReadmitAt - this.deps.clock.now());
    this.readmitTimer = setTimeout(() => {
      this.readmitTimer = null;
      if (this.deps.clock.now() >= this.nextReadmitAt) this.readmitDue();
      else this.armReadmitTimer();
    }, wait);
    this.readmitTimer.unref();
  }

  private probed(e: TargetEntry, pass: boolean): void {
    if (!e.live || !this.config.probe) return;
    const change = probeResult(e, pass, this.config.probe);
    if (change === 'down') this.deps.events.ejected(this.service, e.key, 'probe', null);
    else if (change === 'up') this.deps.events.readmitted(this.service, e.key, 'probe');
    const back = pass && probeEndsEjection(e, this.deps.clock.now(), this.config.probe);
    if (back) this.deps.events.readmitted(this.service, e.key, 'passive');
    if (change || back) this.admissionChanged();
  }

  private lookupSoon(source: Source): void {
    if (source.parsed.literal || !this.started || this.closed || source.resolving || source.soon) return;
    const wait = source.lastLookupAt + LOOKUP_DEBOUNCE_MS - this.deps.clock.now();
    if (wait <= 0) return this.lookup(source);
    source.soon = setTimeout(() => {
      source.soon = null;
      this.lookup(source);
    }, wait);
    source.soon.unref();
  }

  private lookup(source: Source): void {
    if (source.resolving || this.closed) return;
    source.resolving = true;
    source.lastLookupAt = this.deps.clock.now();
    let answer: Promise<string[]>;
    try {
      answer = this.resolve(source.parsed.hostname);
    } catch (err) {
      answer = Promise.reject(err);
    }
    answer.then(
      (addresses) => {
        source.resolving = false;
        if (!this.closed) this.answered(source, addresses);
      },
      (err: unknown) => {
        source.resolving = false;
        if (!this.closed) this.lookupFailed(source, err);
      },
    );
  }

  private answered(source: Source, answer: string[]): void {
    const addresses = normalizeAddresses(answer);
    if (addresses.length === 0) return this.lookupFailed(source, new Error('no address'));
    if (source.addresses && source.addresses.join() === addresses.join()) return;
    // Targets that stay keep their state (ejection, counters, requests in flight); the host name's own
    // target of before the first answer is not one of them.
    const kept = new Map(source.addresses ? source.entries.map((e) => [e.origin, e]) : []);
    const before = source.entries;
    source.entries = addresses.map((a) => kept.get(originFor(source.parsed, a)) ?? this.entry(source, a));
    for (const e of before) if (!source.entries.includes(e)) e.live = false;
    source.addresses = addresses;
    this.rebuild();
    this.deps.events.resolved(this.service, source.parsed.hostname, addresses);
    for (const listener of this.listeners) listener();
  }

  private lookupFailed(source: Source, err: unknown): void {
    const reason = err instanceof Error ? ((err as NodeJS.ErrnoException).code ?? err.message) : String(err);
    this.deps.events.resolved(this.service, source.parsed.hostname, source.addresses ?? [], reason);
  }
}

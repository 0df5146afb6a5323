// What the target set's tests share: a service from its file form, a recorder of the events, a
// seeded random source (a distribution test that fails fails every run), and the clock vitest's fake
// timers move (Date and the timers together, so the set's timers and its clock agree).
import { vi } from 'vitest';
import { serviceConfig, serviceSchema, type ServiceConfig, type ServiceFile } from '../../../src/config/services.js';
import type { Clock } from '../../../src/ops/clock.js';
import { createTargetSet, type TargetSetDeps } from '../../../src/gateway/upstreams/targets.js';
import type { Target, TargetSet, UpstreamEvents } from '../../../src/gateway/upstreams/types.js';

export function service(file: ServiceFile, name = 'svc'): ServiceConfig {
  return serviceConfig(name, serviceSchema.parse(file));
}

export class EventLog implements UpstreamEvents {
  readonly list: string[] = [];
  readonly lookups: { host: string; addresses: string[]; error?: string }[] = [];
  ejected(_service: string, target: string, reason: 'passive' | 'probe', forMs: number | null): void {
    this.list.push(`ejected ${target} ${reason} ${forMs}`);
  }
  readmitted(_service: string, target: string, reason: 'passive' | 'probe'): void {
    this.list.push(`readmitted ${target} ${reason}`);
  }
  retried(): void {}
  budgetExhausted(): void {}
  attempt(): void {}
  resolved(_service: string, host: string, addresses: string[], error?: string): void {
    this.lookups.push(error === undefined ? { host, addresses } : { host, addresses, error });
  }
}

/** mulberry32: a small seeded generator in [0, 1). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fakes Date and the timers; the returned clock reads the faked Date. */
export function fakeTime(): Clock {
  vi.useFakeTimers({
    toFake: ['Date', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'],
    now: Date.UTC(2026, 10, 22, 12, 0, 0),
  });
  return { now: () => Date.now() };
}

/** Lets promise callbacks (an answered lookup, a probe's result) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

export interface Kit {
  set: TargetSet;
  events: EventLog;
}

export function makeSet(file: ServiceFile, deps: Partial<TargetSetDeps> = {}): Kit {
  const events = new EventLog();
  const set = createTargetSet(service(file), {
    clock: { now: () => Date.now() },
    events,
    random: seeded(1),
    ...deps,
  });
  return { set, events };
}

export function keyOf(t: Target | null): string {
  if (!t) throw new Error('no target');
  return t.key;
}

/** How often each target is picked in `n` picks (each taken and given back, no load). */
export function tally(set: TargetSet, n: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const k = keyOf(set.pick());
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

export function target(set: TargetSet, key: string): Target {
  const t = set.all().find((x) => x.key === key);
  if (!t) throw new Error(`no target ${key} in ${set.all().map((x) => x.key)}`);
  return t;
}

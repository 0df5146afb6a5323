// Passive health (failures in a row eject, for a time that grows, within the service's share) and
// active health (the probe's thresholds), driven by vitest's fake clock: nothing here sleeps.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ServiceFile } from '../../../src/config/services.js';
import type { Target } from '../../../src/gateway/upstreams/types.js';
import { fakeTime, makeSet, settle, tally, target, type Kit } from './target-kit.js';

beforeEach(() => void fakeTime());
afterEach(() => void vi.useRealTimers());

const four = ['http://10.0.0.1:80', 'http://10.0.0.2:80', 'http://10.0.0.3:80', 'http://10.0.0.4:80'];
const passive = { consecutiveFailures: 3, baseEjectionMs: 1000, maxEjectionMs: 3500, maxEjectedPercent: 50 };

function kit(file: Partial<ServiceFile> = {}): Kit & { a: Target; b: Target } {
  const k = makeSet({ targets: four, passive, ...file });
  return { ...k, a: target(k.set, '10.0.0.1:80'), b: target(k.set, '10.0.0.2:80') };
}

function fail(k: Kit, t: Target, times: number, result: 'connect_failure' | 'status_5xx' = 'status_5xx') {
  for (let i = 0; i < times; i++) k.set.report(t, result);
}

describe('passive health', () => {
  it('ejects after the failures in a row, and an answer ends the run', () => {
    const k = kit();
    fail(k, k.a, 2);
    k.set.report(k.a, 'ok');
    fail(k, k.a, 2);
    expect(k.events.list).toEqual([]);
    k.set.report(k.a, 'reset');
    expect(k.events.list).toEqual(['ejected 10.0.0.1:80 passive 1000']);
    expect(k.set.healthyCount()).toBe(3);
    expect(tally(k.set, 300)['10.0.0.1:80']).toBeUndefined();
    expect(k.set.health()[0]).toEqual({
      key: '10.0.0.1:80',
      healthy: false,
      ejectedUntil: Date.now() + 1000,
      outstanding: 0,
    });
  });

  it('counts every kind of failure: refused, reset, timeout, 5xx', () => {
    const k = kit();
    for (const r of ['connect_failure', 'reset', 'timeout'] as const) k.set.report(k.a, r);
    expect(k.events.list).toEqual(['ejected 10.0.0.1:80 passive 1000']);
  });

  it('re-admits when the time is up, once, seen by a pick', () => {
    const k = kit();
    fail(k, k.a, 3);
    vi.setSystemTime(Date.now() + 999);
    expect(tally(k.set, 100)['10.0.0.1:80']).toBeUndefined();
    vi.setSystemTime(Date.now() + 1);
    k.set.pick();
    k.set.pick();
    expect(k.events.list).toEqual(['ejected 10.0.0.1:80 passive 1000', 'readmitted 10.0.0.1:80 passive']);
    expect(k.set.healthyCount()).toBe(4);
    expect(tally(k.set, 300)['10.0.0.1:80']).toBeGreaterThan(0);
  });

  it('re-admits by its timer once started, with no request to see it', () => {
    const k = kit();
    k.set.start();
    fail(k, k.a, 3);
    vi.advanceTimersByTime(1000);
    expect(k.events.list).toEqual(['ejected 10.0.0.1:80 passive 1000', 'readmitted 10.0.0.1:80 passive']);
    k.set.close();
  });

  it('ejects for longer each time in a row, up to the maximum', () => {
    const k = kit();
    for (let i = 0; i < 4; i++) {
      fail(k, k.a, 3);
      vi.setSystemTime(k.set.health()[0].ejectedUntil!);
      expect(k.set.healthyCount()).toBe(4);
    }
    expect(k.events.list.filter((e) => e.startsWith('ejected'))).toEqual([
      'ejected 10.0.0.1:80 passive 1000',
      'ejected 10.0.0.1:80 passive 2000',
      'ejected 10.0.0.1:80 passive 3000',
      'ejected 10.0.0.1:80 passive 3500',
    ]);
  });

  it('forgets one ejection per base time healthy', () => {
    const k = kit();
    fail(k, k.a, 3);
    vi.advanceTimersByTime(1000);
    fail(k, k.a, 3);
    vi.advanceTimersByTime(2000);
    fail(k, k.a, 3);
    vi.advanceTimersByTime(3000);
    k.set.healthyCount();
    // Two base times healthy: from three in a row down to one, so the next is the second.
    vi.advanceTimersByTime(2000);
    fail(k, k.a, 3);
    expect(k.events.list.at(-1)).toBe('ejected 10.0.0.1:80 passive 2000');
  });

  it('never ejects more than the share of the service: that ejection is skipped', () => {
    const k = kit();
    const [a, b, c, d] = k.set.all();
    fail(k, a, 3);
    fail(k, b, 3);
    fail(k, c, 5);
    expect(k.events.list).toEqual(['ejected 10.0.0.1:80 passive 1000', 'ejected 10.0.0.2:80 passive 1000']);
    // Once a place frees, the next failure of the run ejects.
    vi.advanceTimersByTime(1000);
    k.set.report(c, 'timeout');
    expect(k.events.list.slice(2)).toEqual([
      'readmitted 10.0.0.1:80 passive',
      'readmitted 10.0.0.2:80 passive',
      'ejected 10.0.0.3:80 passive 1000',
    ]);
    expect(tally(k.set, 100)[d.key]).toBeGreaterThan(0);
  });

  it('leaves one target of a service in place, whatever the share', () => {
    const k = makeSet({ targets: ['http://10.0.0.1:80'], passive: { ...passive, maxEjectedPercent: 100 } });
    fail(k, k.set.all()[0], 10);
    const two = makeSet({ targets: four.slice(0, 2), passive: { ...passive, maxEjectedPercent: 100 } });
    fail(two, two.set.all()[0], 3);
    fail(two, two.set.all()[1], 3);
    expect([k.events.list, two.events.list]).toEqual([[], ['ejected 10.0.0.1:80 passive 1000']]);
  });

  it('ignores a target of another set', () => {
    const k = kit();
    const other = kit();
    fail(k, other.a, 5);
    expect(k.events.list).toEqual([]);
    expect(k.set.healthyCount()).toBe(4);
  });
});

/** A probe whose answers the test sets per target; counts the probes sent. */
function scriptedProbe() {
  const passes = new Map<string, boolean>();
  const sent: string[] = [];
  const probe = vi.fn(async (t: Target, path: string, timeoutMs: number) => {
    sent.push(`${t.key} ${path} ${timeoutMs}`);
    return passes.get(t.key) ?? true;
  });
  return { passes, sent, probe };
}

describe('active health', () => {
  const probeCfg = { path: '/health', intervalMs: 1000, timeoutMs: 200, healthyThreshold: 2, unhealthyThreshold: 3 };

  it('puts a target out after the failed probes in a row, back after the passes, each once', async () => {
    const p = scriptedProbe();
    const { set, events } = makeSet({ targets: four.slice(0, 2), probe: probeCfg }, { probe: p.probe });
    p.passes.set('10.0.0.1:80', false);
    set.start();
    await settle();
    expect(p.sent).toEqual(['10.0.0.1:80 /health 200', '10.0.0.2:80 /health 200']);
    await vi.advanceTimersByTimeAsync(1000);
    expect(events.list).toEqual([]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(events.list).toEqual(['ejected 10.0.0.1:80 probe null']);
    expect(set.healthyCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(3000);
    p.passes.set('10.0.0.1:80', true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(set.healthyCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(events.list).toEqual(['ejected 10.0.0.1:80 probe null', 'readmitted 10.0.0.1:80 probe']);
    expect(set.healthyCount()).toBe(2);
    set.close();
  });

  it('a failure between passes starts the count again', async () => {
    const p = scriptedProbe();
    const { set, events } = makeSet(
      { targets: four.slice(0, 2), probe: { ...probeCfg, unhealthyThreshold: 2 } },
      { probe: p.probe },
    );
    const seq = [false, true, false, true, false, false];
    let i = 0;
    p.probe.mockImplementation(async (t) => (t.key === '10.0.0.1:80' ? seq[i++] : true));
    set.start();
    for (let r = 0; r < 5; r++) await vi.advanceTimersByTimeAsync(1000);
    expect(events.list).toEqual(['ejected 10.0.0.1:80 probe null']);
    expect(i).toBe(6);
    set.close();
  });

  it('ends a passive ejection once the probe passed its threshold since it began', async () => {
    const p = scriptedProbe();
    const k = makeSet(
      {
        targets: four.slice(0, 2),
        passive: { ...passive, baseEjectionMs: 60_000, maxEjectionMs: 60_000 },
        probe: probeCfg,
      },
      { probe: p.probe },
    );
    k.set.start();
    await vi.advanceTimersByTimeAsync(3000); // passes before the ejection do not count
    fail(k, k.set.all()[0], 3);
    expect(k.events.list).toEqual(['ejected 10.0.0.1:80 passive 60000']);
    await vi.advanceTimersByTimeAsync(1000);
    expect(k.set.healthyCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(k.events.list).toEqual(['ejected 10.0.0.1:80 passive 60000', 'readmitted 10.0.0.1:80 passive']);
    expect(k.set.healthyCount()).toBe(2);
    k.set.close();
  });

  it('does not send another probe to a target still answering the last', async () => {
    let release!: (pass: boolean) => void;
    const probe = vi.fn(() => new Promise<boolean>((r) => (release = r)));
    const { set } = makeSet({ targets: four.slice(0, 1), probe: probeCfg }, { probe });
    set.start();
    await vi.advanceTimersByTimeAsync(5000);
    expect(probe).toHaveBeenCalledTimes(1);
    release(true);
    await settle();
    await vi.advanceTimersByTimeAsync(1000);
    expect(probe).toHaveBeenCalledTimes(2);
    set.close();
  });

  it('a probe that throws counts as failed', async () => {
    const probe = vi.fn(async () => {
      throw new Error('boom');
    });
    const { set, events } = makeSet(
      { targets: four.slice(0, 2), probe: { ...probeCfg, unhealthyThreshold: 1 } },
      { probe },
    );
    set.start();
    await settle();
    expect(events.list).toEqual(['ejected 10.0.0.1:80 probe null', 'ejected 10.0.0.2:80 probe null']);
    set.close();
  });
});

describe('panic mode', () => {
  it('with every target out, still chooses among all of them', async () => {
    const { set, events } = makeSet(
      { targets: four.slice(0, 3), probe: { path: '/h', intervalMs: 1000, unhealthyThreshold: 1 } },
      { probe: async () => false },
    );
    set.start();
    await settle();
    expect(events.list).toHaveLength(3);
    expect(set.healthyCount()).toBe(0);
    expect(set.health().every((h) => !h.healthy)).toBe(true);
    expect(Object.keys(tally(set, 300)).sort()).toEqual(['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80']);
    const first = set.pick()!;
    expect(set.pick(new Set([first]))).not.toBe(first);
    set.close();
  });

  it('passive and active verdicts are apart: a target returns when both have let it', async () => {
    let pass = true;
    const { set, events } = makeSet(
      {
        targets: four.slice(0, 2),
        passive,
        probe: { path: '/h', intervalMs: 1000, unhealthyThreshold: 1, healthyThreshold: 1 },
      },
      { probe: async (t) => pass || t.key !== '10.0.0.1:80' },
    );
    set.start();
    await vi.advanceTimersByTimeAsync(500);
    for (let i = 0; i < 3; i++) set.report(set.all()[0], 'timeout');
    pass = false;
    await vi.advanceTimersByTimeAsync(500);
    pass = true;
    await vi.advanceTimersByTimeAsync(500);
    // The ejection is over, the probe's verdict stands.
    expect(set.healthyCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(500);
    expect(events.list).toEqual([
      'ejected 10.0.0.1:80 passive 1000',
      'ejected 10.0.0.1:80 probe null',
      'readmitted 10.0.0.1:80 passive',
      'readmitted 10.0.0.1:80 probe',
    ]);
    expect(set.healthyCount()).toBe(2);
    set.close();
  });
});

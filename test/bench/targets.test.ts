// The bench's targets (bench/suite.ts): pure arithmetic over scenario results, so part of `npm test`;
// the short run of the scenarios themselves is test/bench/bench.test.ts (`npm run test:perf`).
import { describe, it, expect } from 'vitest';
import { targets, type ScenarioResult } from '../../bench/suite.js';

describe('bench targets', () => {
  const scenario = (name: ScenarioResult['name'], rounds: [number, number][]): ScenarioResult =>
    ({
      name,
      rps: rounds[0][0],
      p99: rounds[0][1],
      connections: 50,
      rounds: rounds.map(([rps, p99]) => ({ rps, p50: 1, p99, errors: 0, non2xx: 0 })),
    }) as ScenarioResult;

  it('compares two scenarios round by round and takes the median of the rounds', () => {
    // Round 2 is the median round of both scenarios by throughput only when mixed; paired, the
    // ratios are 0.9, 0.5 and 0.95 and the p99 differences 1, 5 and 0.5 ms.
    const bare = scenario('bare-proxy', [
      [1000, 10],
      [2000, 10],
      [1200, 10],
    ]);
    const gw = scenario('gateway', [
      [900, 11],
      [1000, 15],
      [1140, 10.5],
    ]);
    const [tp, p99] = targets([bare, gw]);
    expect(tp.measured).toBe(0.9);
    expect(tp.perRound).toEqual([0.9, 0.5, 0.95]);
    expect(tp.pass).toBe(true);
    expect(tp.display).toBe('0.90 (rounds 0.90, 0.50, 0.95)');
    expect(p99.measured).toBe(1);
    expect(p99.pass).toBe(true);
  });

  it('with one round, compares that round', () => {
    const [tp, p99] = targets([scenario('bare-proxy', [[1000, 10]]), scenario('gateway', [[800, 12]])]);
    expect(tp.measured).toBe(0.8);
    expect(tp.pass).toBe(false);
    expect(tp.display).toBe('0.80');
    expect(p99.measured).toBe(2);
    expect(p99.pass).toBe(false);
  });
});

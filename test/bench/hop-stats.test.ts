// The hop suite's arithmetic (bench/hop-stats.ts): the slots of a round, pooled medians over processes
// and rounds, the spread between processes, ratios and the verdict's noise line. Pure, so part of `npm test`.
import { describe, it, expect } from 'vitest';
import { median, noiseLine, pooled, ratio, slotOrder, verdict } from '../../bench/hop-stats.js';

/** Rows of one target: cpu[proc - 1][round - 1]. */
const rows = (cpu: number[][]) =>
  cpu.flatMap((rounds, p) => rounds.map((cpuUs, r) => ({ proc: p + 1, round: r + 1, cpuUs })));
const cpu = (x: { cpuUs: number }) => x.cpuUs;

describe('slotOrder', () => {
  const groups = [
    { target: 'bare', procs: [1, 2, 3] },
    { target: 'keygate', procs: [1, 2, 3] },
    { target: 'traced', procs: [1, 2, 3] },
  ];
  const key = (s: { target: string; proc: number }) => `${s.target}#${s.proc}`;

  it('gives every process of every target exactly one slot a round', () => {
    for (let round = 1; round <= 5; round++) {
      const slots = slotOrder(groups, round).map(key);
      expect(slots).toHaveLength(9);
      expect(new Set(slots)).toEqual(new Set(groups.flatMap((g) => g.procs.map((p) => `${g.target}#${p}`))));
    }
  });

  it('interleaves the targets: never two slots of one target back to back, within or across passes', () => {
    for (let round = 1; round <= 4; round++) {
      const slots = slotOrder(groups, round);
      for (let i = 1; i < slots.length; i++) expect(slots[i].target).not.toBe(slots[i - 1].target);
      // Each pass of three slots holds each target once.
      for (let pass = 0; pass < 3; pass++)
        expect(new Set(slots.slice(3 * pass, 3 * pass + 3).map((s) => s.target)).size).toBe(3);
    }
  });

  it('rotates which target opens the round, so each opens one round in three', () => {
    const firsts = [1, 2, 3, 4, 5, 6].map((round) => slotOrder(groups, round)[0].target);
    expect(firsts).toEqual(['bare', 'keygate', 'traced', 'bare', 'keygate', 'traced']);
  });

  it('moves each process through the passes over the rounds', () => {
    // The pass in which bare#1 runs, rounds 1 to 3: every pass once.
    const passOf = (round: number) =>
      Math.floor(slotOrder(groups, round).findIndex((s) => s.target === 'bare' && s.proc === 1) / 3);
    expect([1, 2, 3].map(passOf).sort()).toEqual([0, 1, 2]);
  });

  it('runs the processes a target still has when one of them did not start', () => {
    const partial = [
      { target: 'bare', procs: [1, 2, 3] },
      { target: 'keygate', procs: [1, 3] },
    ];
    const slots = slotOrder(partial, 2).map(key);
    expect(slots.sort()).toEqual(['bare#1', 'bare#2', 'bare#3', 'keygate#1', 'keygate#3']);
  });
});

describe('pooled', () => {
  it('takes the median over every window of every process, the spread from the processes’ own medians', () => {
    // Process 3 runs hot in every round: a draw of one process, as between two processes of one build.
    const p = pooled(
      rows([
        [100, 90, 104],
        [98, 101, 102],
        [120, 118, 125],
      ]),
      cpu,
    );
    expect(p.median).toBe(102); // of 90 98 100 101 102 104 118 120 125
    expect(p.spread.procs).toEqual([
      { proc: 1, median: 100 },
      { proc: 2, median: 101 },
      { proc: 3, median: 120 },
    ]);
    expect(p.spread.lo).toBeCloseTo(100 / 102, 10);
    expect(p.spread.hi).toBeCloseTo(120 / 102, 10);
    expect(p.spread.rel).toBeCloseTo(20 / 102, 10);
    expect(p.rounds).toEqual([100, 101, 104]); // per round, the median over the three processes
  });

  it('has no spread with one process', () => {
    const p = pooled(rows([[100, 110, 120]]), cpu);
    expect(p.median).toBe(110);
    expect(p.spread.rel).toBeNaN();
    expect(p.spread.lo).toBe(1);
    expect(p.spread.hi).toBe(1);
  });

  it('leaves out windows without a figure (no request answered)', () => {
    expect(median([NaN, 3, 1, 2])).toBe(2);
    expect(median([4, 1])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('ratio', () => {
  const base = rows([
    [100, 100, 100],
    [104, 104, 104],
    [96, 96, 96],
  ]); // pooled 100, processes 0.96 to 1.04
  it('divides the pooled medians, not the median of the rounds’ ratios', () => {
    // Rounds' medians 105 / 105 / 112 against the base's 100 each: round ratios 1.05, 1.05, 1.12
    // (median 1.05); pooled, the target's nine windows have median 106.
    const target = rows([
      [80, 80, 110],
      [105, 105, 112],
      [106, 107, 113],
    ]);
    const r = ratio(target, base, cpu);
    expect(r.median).toBeCloseTo(1.06, 10);
    expect(r.rounds.map((x) => +x.toFixed(2))).toEqual([1.05, 1.05, 1.12]);
    expect(r.procs.map((x) => +x.toFixed(2))).toEqual([0.8, 1.05, 1.07]);
    expect(r.base.lo).toBeCloseTo(0.96, 10);
    expect(r.base.hi).toBeCloseTo(1.04, 10);
    expect(r.insideNoise).toBe(false);
    expect(noiseLine(r, 'keygate')).toMatch(
      /^keygate's 3 processes span 0\.96 to 1\.04 × their pooled median \(spread 8 %\); 1\.06 is outside it; the target's processes: 0\.80 \/ 1\.05 \/ 1\.07 × keygate$/,
    );
  });

  it('says when the ratio lies inside the baseline’s own spread between processes', () => {
    const r = ratio(rows([[103, 103], [103]]), base, cpu);
    expect(r.median).toBeCloseTo(1.03, 10);
    expect(r.insideNoise).toBe(true);
    expect(noiseLine(r, 'keygate')).toContain('1.03 is inside it: this run does not tell the two apart');
    expect(verdict(r.median, 1.05)).toBe('PASS');
    expect(verdict(1.06, 1.05)).toBe('FAIL');
    expect(verdict(NaN, 1.05)).toBe('not run');
  });

  it('pairs rounds by number and names a one-process baseline as unmeasured noise', () => {
    const one = ratio(rows([[110, 120]]), rows([[100, 100, 100]]), cpu);
    expect(one.rounds).toEqual([1.1, 1.2]);
    expect(one.insideNoise).toBeNull();
    expect(noiseLine(one, 'bare')).toMatch(/^bare ran as one process: the spread between processes .* is not measured/);
  });
});

// bench/diagnostics/promotion-state.mjs classifies a gateway process from V8's `--trace-gc-nvp` lines: the
// RESULTS section on the high-promotion state counts processes with it, so its reading is pinned here on
// lines in V8's format (Node 20, V8 11.3), trimmed to the fields it reads.
import { describe, it, expect } from 'vitest';
// @ts-expect-error: a plain .mjs diagnostic without declarations
import { promotionState } from '../../bench/diagnostics/promotion-state.mjs';

const young = (kept: number, promoted = 0, allocated = 11_000_000, at = 5094) =>
  `[1:0x1]  ${at} ms: pause=4.5 mutator=30.1 gc=s reduce_memory=0 allocated=${allocated} promoted=${promoted} new_space_survived=${kept} promotion_ratio=0.0%`;
const full =
  '[1:0x1]  5015 ms: pause=1.7 mutator=20.0 gc=mc reduce_memory=0 allocated=1208744 promoted=794368 new_space_survived=0';
const markingStarts = '[1:0x1]  4990 ms: [IncrementalMarking] Start marking';
const lines = (...xs: string[]) => xs.join('\n');

describe('promotion-state.mjs', () => {
  it('a process whose young collections keep about 0.1 MB is normal', () => {
    const s = promotionState(lines(young(4_400_000, 2_900_000), ...Array(20).fill(young(90_000, 20_000)), full));
    expect(s.state).toBe('normal');
    expect(s).toMatchObject({ young: 21, full: 1, promotedBytes: 2_900_000 + 20 * 20_000, keptMedianBytes: 90_000 });
  });

  it('a process whose young collections keep 2 MB and promote it at the next is high', () => {
    const s = promotionState(
      lines(...Array(10).fill(young(2_300_000, 2_300_000)), full, ...Array(10).fill(young(2_400_000))),
    );
    expect(s.state).toBe('high');
    expect(s.highShare).toBe(1);
  });

  it('a process that enters the state during the run is high once over a quarter of its collections are', () => {
    const normal = Array(30).fill(young(100_000));
    expect(promotionState(lines(...normal, ...Array(11).fill(young(2_000_000)))).state).toBe('high');
    expect(promotionState(lines(...normal, ...Array(9).fill(young(2_000_000)))).state).toBe('normal');
  });

  it('leaves out young collections forced with little allocated (start-up, idle)', () => {
    const s = promotionState(lines(...Array(5).fill(young(3_000_000, 0, 1_000_000)), young(80_000)));
    expect(s).toMatchObject({ state: 'normal', young: 6, keptMedianBytes: 80_000 });
  });

  it('tells the young collections during a marking from the others', () => {
    const s = promotionState(lines(young(90_000), markingStarts, young(4_188_000), full, young(99_000)));
    expect(s.keptDuringMarking).toEqual({ count: 1, medianBytes: 4_188_000 });
    expect(s.keptOtherwise).toEqual({ count: 2, medianBytes: 99_000 });
  });

  it('dates the entry of a process in the state at its first five collections in a row over 1 MB after start-up', () => {
    const startUp = [300, 340, 380, 420, 460].map((at) => young(1_500_000, 0, 6_000_000, at));
    const normal = Array(10).fill(young(100_000));
    const burst = [young(4_800_000, 0, 20_000_000, 5412), young(700_000, 3_500_000, 12_000_000, 5881)];
    const high = [6324, 6721, 7112, 7368, 7549, 7725, 7962].map((at) => young(2_300_000, 2_200_000, 13_000_000, at));
    expect(promotionState(lines(...startUp, ...normal, ...burst, ...high)).enteredAtMs).toBe(6324);
    // In the state from the first load on, after start-up and an idle pause: the entry is the load's.
    const early = [300, 340, 380, 420, 460, 520].map((at) => young(1_500_000, 0, 6_000_000, at));
    expect(promotionState(lines(...early, ...high)).enteredAtMs).toBe(6324);
    // A normal process has no entry, even with a run at start-up.
    const s = promotionState(lines(...startUp, ...Array(30).fill(young(100_000))));
    expect(s).toMatchObject({ state: 'normal', enteredAtMs: null });
  });

  it('counts the allocation sites V8 decided to pretenure, once each', () => {
    const site = (from: string, to: string) =>
      `[1:0x1] pretenuring: AllocationSite(0x15e3951): (created, found, ratio) (2047, 2047, 1.000000) ${from} => ${to}`;
    const s = promotionState(
      lines(site('undecided', 'maybe tenure'), site('maybe tenure', 'tenure'), young(90_000), site('tenure', 'tenure')),
    );
    expect(s.tenured).toBe(1);
    expect(promotionState(lines(young(90_000))).tenured).toBe(0);
  });

  it('reads a log without collections as unknown', () => {
    expect(promotionState('gateway listening\n').state).toBe('unknown');
  });
});

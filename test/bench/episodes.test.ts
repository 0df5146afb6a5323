// bench/diagnostics/episodes.mjs sorts builds-ab's slow episodes into a window's start and its middle;
// bench/RESULTS.md counts them with it, so its reading is pinned here on lines in builds-ab's format.
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs diagnostic without declarations
import { windows } from '../../bench/diagnostics/episodes.mjs';

const line = (target: string, round: number, episodes: string) =>
  `fixed 8000 req/s round ${round} ${target.padEnd(12)} CPU 98.6 µs/req  p50 0.77 p99 71.11 ms  loop lag max 14 ms  largest slow episodes: ${episodes}`;

describe('episodes.mjs', () => {
  it("tells a window's start episode from the mid-window ones of 20 ms or more", () => {
    const [w] = windows(
      line('full', 1, '@5 ms n=3469 max=78; @7896 ms n=342 max=25; @3725 ms n=136 max=9; @515 ms n=43 max=20'),
    );
    expect(w).toMatchObject({ target: 'full', round: 1, rate: 8000, cpuUs: 98.6, p99: 71.11 });
    expect(w.start).toEqual({ at: 5, n: 3469, max: 78 });
    expect(w.mid).toEqual([
      { at: 7896, n: 342, max: 25 },
      { at: 515, n: 43, max: 20 },
    ]);
  });

  it('reads a window without a start episode, a bare target without loop lag, and skips other lines', () => {
    const text = [
      'warm-up full: 11183 req/s {"200":33550}',
      line('full', 2, '@693 ms n=695 max=29; @3837 ms n=456 max=29'),
      'fixed 8000 req/s round 2 bare         CPU 73.9 µs/req  p50 0.83 p99 2.24 ms  largest slow episodes: @43 ms n=37 max=6; @6 ms n=19 max=10',
      'fixed 8000 req/s full         CPU median 98.6 µs/req, x bare 1.298 [1.30, 1.27]',
    ].join('\n');
    const ws = windows(text);
    expect(ws).toHaveLength(2);
    expect(ws[0].start).toBeNull();
    expect(ws[0].mid).toHaveLength(2);
    expect(ws[1]).toMatchObject({ target: 'bare', p99: 2.24, start: { at: 43, n: 37, max: 6 }, mid: [] });
  });
});

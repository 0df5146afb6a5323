// The hop suite's arithmetic (bench/hop.ts), kept pure for test/bench/hop-stats.test.ts: the order of
// the slots of a round, the pooled medians, the spread between processes of one target, the ratios and
// the verdict line that sets a ratio beside the baseline's own spread.
//
// Why processes: between two processes of the very same build CPU per request differs by 10 to 15 %
// (V8's JIT, GC and layout luck, fixed for the life of a process), so one process per target compares
// two draws, not two builds (bench/RESULTS.md, 2026-11-26: tracing at 1 % read 1.22 × off with one
// process each, 0.95 and 0.96 against an untraced spread of 1.00 to 1.05 with three).

export const median = (a: readonly number[]): number => {
  const s = a.filter(Number.isFinite).sort((x, y) => x - y);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

/** One measured window: process `proc` (1-based) of a target in round `round` (1-based). */
export interface Slot<T> {
  target: T;
  proc: number;
}

/**
 * The slots of one round (1-based): every running process of every target once. The round is cut into
 * passes, as many as the most processes any target has; each pass holds each target once, in the same
 * order, so a target's processes are spread evenly over the round (never two slots of one target back
 * to back) and meet the machine's drift alike. That order is rotated by one each round, so no target
 * always opens the round (the slot after the previous round's fixed-load phase); which process a
 * target's pass takes turns with the round, so no process always runs in the same part of a round.
 */
export function slotOrder<T>(groups: readonly { target: T; procs: readonly number[] }[], round: number): Slot<T>[] {
  const passes = Math.max(0, ...groups.map((g) => g.procs.length));
  const out: Slot<T>[] = [];
  const n = groups.length;
  for (let pass = 0; pass < passes; pass++) {
    for (let i = 0; i < n; i++) {
      const g = groups[(i + round - 1) % n];
      if (pass >= g.procs.length) continue;
      out.push({ target: g.target, proc: g.procs[(pass + round - 1) % g.procs.length] });
    }
  }
  return out;
}

export interface Measured {
  round: number;
  proc: number;
}

export interface Spread {
  /** Each process's median over its rounds, by process number. */
  procs: { proc: number; median: number }[];
  /** The lowest and highest process median over the pooled median (1 and 1 with one process). */
  lo: number;
  hi: number;
  /** (highest - lowest process median) / pooled median; NaN with fewer than two processes. */
  rel: number;
}

export interface Pooled {
  /** The median over every window of every process and round. */
  median: number;
  /** Per round, the median over the processes measured in it. */
  rounds: number[];
  spread: Spread;
}

/** A target's figure pooled over its processes and rounds, with the spread between its processes. */
export function pooled<R extends Measured>(rows: readonly R[], pick: (r: R) => number): Pooled {
  const all = median(rows.map(pick));
  const roundIds = [...new Set(rows.map((r) => r.round))].sort((a, b) => a - b);
  const procIds = [...new Set(rows.map((r) => r.proc))].sort((a, b) => a - b);
  const procs = procIds.map((proc) => ({ proc, median: median(rows.filter((r) => r.proc === proc).map(pick)) }));
  const meds = procs.map((p) => p.median).filter(Number.isFinite);
  const [min, max] = meds.length ? [Math.min(...meds), Math.max(...meds)] : [NaN, NaN];
  return {
    median: all,
    rounds: roundIds.map((round) => median(rows.filter((r) => r.round === round).map(pick))),
    spread: { procs, lo: min / all, hi: max / all, rel: meds.length >= 2 ? (max - min) / all : NaN },
  };
}

export interface Ratio {
  /** The target's pooled median over the baseline's: the headline. */
  median: number;
  /** Round by round, the ratio of the two rounds' medians over processes (informative). */
  rounds: number[];
  /** Each process median of the target over the baseline's pooled median. */
  procs: number[];
  /** The baseline's spread between its own processes, the noise a ratio is read against. */
  base: Spread;
  /** Whether the ratio lies within the baseline's process medians over their pooled median (lo..hi). */
  insideNoise: boolean | null;
}

export function ratio<R extends Measured>(rows: readonly R[], baseRows: readonly R[], pick: (r: R) => number): Ratio {
  const a = pooled(rows, pick);
  const b = pooled(baseRows, pick);
  const baseByRound = new Map(
    [...new Set(baseRows.map((r) => r.round))].sort((x, y) => x - y).map((round, i) => [round, b.rounds[i]]),
  );
  const roundIds = [...new Set(rows.map((r) => r.round))].sort((x, y) => x - y);
  const value = a.median / b.median;
  return {
    median: value,
    rounds: roundIds.flatMap((round, i) => (baseByRound.has(round) ? [a.rounds[i] / baseByRound.get(round)!] : [])),
    procs: a.spread.procs.map((p) => p.median / b.median),
    base: b.spread,
    insideNoise:
      Number.isFinite(value) && Number.isFinite(b.spread.rel) ? value >= b.spread.lo && value <= b.spread.hi : null,
  };
}

const f2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : '-');

/** PASS or FAIL against `limit` (the ratio at most), `not run` without a figure. */
export const verdict = (v: number, limit: number) => (Number.isFinite(v) ? (v <= limit ? 'PASS' : 'FAIL') : 'not run');

/**
 * The line after a target's verdict: the baseline's own spread between processes, and whether the ratio
 * lies inside it (then the run does not tell the target from its baseline, whatever the verdict).
 */
export function noiseLine(r: Ratio, baseName: string): string {
  const n = r.base.procs.length;
  if (!Number.isFinite(r.median)) return '';
  if (n < 2)
    return `${baseName} ran as one process: the spread between processes (10 to 15 % in earlier runs) is not measured, so this ratio may be a draw of one process against another`;
  const where = r.insideNoise
    ? `${f2(r.median)} is inside it: this run does not tell the two apart`
    : `${f2(r.median)} is outside it`;
  return `${baseName}'s ${n} processes span ${f2(r.base.lo)} to ${f2(r.base.hi)} × their pooled median (spread ${(100 * r.base.rel).toFixed(0)} %); ${where}; the target's processes: ${r.procs.map(f2).join(' / ')} × ${baseName}`;
}

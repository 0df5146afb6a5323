// Which processes of a run were in the high-promotion state (bench/RESULTS.md, "the high-promotion state"):
// reads V8's `--trace-gc-nvp` lines from each process's log and prints, per process, its young and full
// collections, what the young collections promoted and how much of the young generation each kept
// (median), and, when the log also has `--trace-incremental-marking`, the young collections that ran
// during a marking apart from the others, and when it also has `--trace-pretenuring-statistics`, how many
// literal sites V8 decided to tenure (make in the old generation; bench/RESULTS.md, `62f145d`: what
// started the state; `--trace-pretenuring` alone prints no decision).
//
//   AB_TARGETS="k1=bench/.build/cur/cli.js@--trace-gc-nvp;k2=bench/.build/cur/cli.js@--trace-gc-nvp" \
//     AB_FIXED=4000 AB_SATURATE=off AB_ROUNDS=3 AB_DURATION=8 DATABASE_URL=... npx tsx bench/diagnostics/builds-ab.ts
//   node bench/diagnostics/promotion-state.mjs /tmp/builds-ab-k1.log /tmp/builds-ab-k2.log
//
// A young collection under load keeps 35 to 250 KB in the normal state and 1.9 to 3.0 MB in the high one
// (HIGH_KEPT_BYTES lies between); a process is `high` when more than HIGH_SHARE of them kept more than
// that (a process may enter the state during a run, and a few collections at the first load keep more).
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';

export const HIGH_KEPT_BYTES = 1_000_000;
export const HIGH_SHARE = 0.25;
/** Young collections that freed less than this were forced (start-up, idle), not load. */
const MIN_ALLOCATED = 5_000_000;
/**
 * A process in the state entered it at the first of ENTRY_RUN young collections in a row that each kept
 * over HIGH_KEPT_BYTES, counted from its first pause of more than IDLE_MS between two young collections
 * on (the end of start-up, whose collections keep what start-up made; from the start when it has none).
 */
export const ENTRY_RUN = 5;
const IDLE_MS = 1_000;

/**
 * Whether a line of `--trace-pretenuring-statistics` is V8 deciding to tenure a literal site:
 * `... AllocationSite(0x...): (created, found, ratio) (2047, 2047, 1.000000) maybe tenure => tenure`.
 */
export function isTenureDecision(line) {
  const decision = /pretenuring: AllocationSite.*\) ([a-z' ]+) => ([a-z' ]+)$/.exec(line.trimEnd());
  return decision !== null && decision[2] === 'tenure' && decision[1] !== 'tenure';
}

const field = (line, name) => {
  const m = new RegExp(`\\b${name}=(\\d+)`).exec(line);
  return m ? Number(m[1]) : 0;
};
const median = (xs) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
};

/** The collections of one log: `--trace-gc-nvp` lines, marking spans from `--trace-incremental-marking`. */
export function promotionState(text) {
  let marking = false;
  let young = 0;
  let full = 0;
  let promoted = 0;
  const kept = { marking: [], other: [] };
  // The current run of young collections over HIGH_KEPT_BYTES, and the entry: the first run of ENTRY_RUN,
  // forgotten at the end of start-up (its first idle pause).
  let run = 0;
  let runStartMs = null;
  let entryMs = null;
  let lastMs = null;
  let startedUp = false;
  let tenured = 0;
  for (const line of text.split('\n')) {
    if (line.includes('pretenuring:')) {
      if (isTenureDecision(line)) tenured++;
    } else if (line.includes('[IncrementalMarking] Start marking')) marking = true;
    else if (/\bgc=(mc|ms)\b/.test(line)) {
      full++;
      marking = false;
    } else if (/\bgc=s\b/.test(line)) {
      young++;
      promoted += field(line, 'promoted');
      const ms = Number(/(\d+) ms: /.exec(line)?.[1] ?? NaN);
      if (!startedUp && lastMs !== null && ms - lastMs > IDLE_MS) {
        startedUp = true;
        run = 0;
        entryMs = null;
      }
      lastMs = ms;
      if (field(line, 'allocated') >= MIN_ALLOCATED) {
        const bytes = field(line, 'new_space_survived');
        (marking ? kept.marking : kept.other).push(bytes);
        if (bytes <= HIGH_KEPT_BYTES) run = 0;
        else if (run++ === 0) runStartMs = ms;
        if (run === ENTRY_RUN) entryMs ??= runStartMs;
      }
    }
  }
  const all = [...kept.marking, ...kept.other];
  const keptMedian = median(all);
  const highShare = all.length ? all.filter((b) => b > HIGH_KEPT_BYTES).length / all.length : null;
  const state = highShare === null ? 'unknown' : highShare > HIGH_SHARE ? 'high' : 'normal';
  return {
    young,
    full,
    promotedBytes: promoted,
    keptMedianBytes: keptMedian,
    /** Share of the young collections under load that kept more than HIGH_KEPT_BYTES. */
    highShare,
    keptDuringMarking: { count: kept.marking.length, medianBytes: median(kept.marking) },
    keptOtherwise: { count: kept.other.length, medianBytes: median(kept.other) },
    state,
    /** For a process in the state, process time (ms) of the collection it entered it at (ENTRY_RUN); otherwise null. */
    enteredAtMs: state === 'high' ? entryMs : null,
    /** Literal sites V8 decided to tenure (`--trace-pretenuring-statistics` lines). */
    tenured,
  };
}

const kb = (b) => (b === null ? '-' : `${Math.round(b / 1e3)} KB`);

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node bench/diagnostics/promotion-state.mjs <log with --trace-gc-nvp>...');
    process.exit(2);
  }
  for (const file of files) {
    const s = promotionState(readFileSync(file, 'utf8'));
    const marking = s.keptDuringMarking.count
      ? `; during a marking ${s.keptDuringMarking.count} kept ${kb(s.keptDuringMarking.medianBytes)}, otherwise ${kb(s.keptOtherwise.medianBytes)}`
      : '';
    const entered = s.enteredAtMs === null ? '' : `; entered at ${s.enteredAtMs} ms`;
    console.log(
      `${basename(file).padEnd(28)} ${s.state.padEnd(7)} young ${String(s.young).padStart(4)}  full ${String(s.full).padStart(3)}  promoted ${Math.round(s.promotedBytes / 1e6)} MB  kept a young collection (median) ${kb(s.keptMedianBytes)}, over 1 MB ${s.highShare === null ? '-' : `${Math.round(100 * s.highShare)} %`}${marking}${entered}; sites pretenured ${s.tenured}`,
    );
  }
}

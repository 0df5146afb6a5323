// The slow episodes of builds-ab's paced windows, sorted into the two kinds bench/RESULTS.md tells apart
// (section `d10f5d5`): one that starts with the window (a process meeting a new load shape: V8 compiling
// again what the change deoptimized) and those in the middle of it (full collections, and others).
// builds-ab prints, per paced window, its five largest runs of answers slower than 5 ms as
// `@<ms into the window> ms n=<answers> max=<ms>`; an episode starting in the window's first START_MS
// is the start's, one later with a maximum of at least MID_MS counts as a mid-window episode.
//   node bench/diagnostics/episodes.mjs <builds-ab output saved to a file>
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const START_MS = 100;
const MID_MS = 20;

/** Each paced window of builds-ab's output: target, round, CPU, p99, its start episode and mid-window episodes. */
export function windows(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^fixed (\d+) req\/s round (\d+) (\S+)\s+CPU ([\d.]+) µs\/req .*?p99 ([\d.]+) ms/.exec(line);
    if (!m) continue;
    const episodes = [...line.matchAll(/@(\d+) ms n=(\d+) max=(\d+)/g)].map((e) => ({
      at: Number(e[1]),
      n: Number(e[2]),
      max: Number(e[3]),
    }));
    out.push({
      rate: Number(m[1]),
      round: Number(m[2]),
      target: m[3],
      cpuUs: Number(m[4]),
      p99: Number(m[5]),
      start: episodes.find((e) => e.at < START_MS) ?? null,
      mid: episodes.filter((e) => e.at >= START_MS && e.max >= MID_MS),
    });
  }
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const all = windows(readFileSync(process.argv[2], 'utf8'));
  const byTarget = new Map();
  for (const w of all) {
    const start = w.start ? `n=${w.start.n} max=${w.start.max}` : '-';
    const mid = w.mid.map((e) => `@${e.at} n=${e.n} max=${e.max}`).join(', ') || '-';
    console.log(
      `${w.target.padEnd(12)} round ${w.round}  p99 ${w.p99.toFixed(2)} ms  start: ${start}  mid ≥ ${MID_MS} ms: ${mid}`,
    );
    const t = byTarget.get(w.target) ?? { windows: 0, mid: 0 };
    t.windows++;
    t.mid += w.mid.length;
    byTarget.set(w.target, t);
  }
  for (const [target, t] of byTarget)
    console.log(
      `${target.padEnd(12)} ${t.mid} mid-window episodes of ${MID_MS} ms or more in ${t.windows} windows (among each window's five largest)`,
    );
}

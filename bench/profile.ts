// Summarise a .cpuprofile (from the inspector's Profiler, the format of `node --cpu-prof`): self time
// by function and by area (keygate's own modules, each dependency, node internals, GC, idle).
// Usage: npx tsx bench/profile.ts bench/results/profiles/<file>.cpuprofile
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Share of non-idle time. */
  areas: { area: string; ms: number; pct: number }[];
  functions: { fn: string; at: string; ms: number; pct: number }[];
}

export function areaOf(url: string, fn: string): string {
  if (fn === '(idle)') return '(idle)';
  if (fn === '(garbage collector)') return '(garbage collector)';
  if (fn === '(program)' || fn === '(root)') return '(program)';
  if (!url) return 'native';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + 14).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const src = url.indexOf('/src/');
  if (src !== -1) return 'src/' + url.slice(src + 5);
  const bench = url.indexOf('/bench/');
  if (bench !== -1) return 'bench/' + url.slice(bench + 7);
  return url;
}

export function summarise(file: string, top = 25): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt);
  }
  const areas = new Map<string, number>();
  const fns = new Map<string, { fn: string; at: string; ms: number }>();
  let busy = 0;
  let total = 0;
  for (const [id, ms] of self) {
    const n = byId.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    const fn = functionName || '(anonymous)';
    const area = areaOf(url, fn);
    total += ms;
    if (area === '(idle)') continue;
    busy += ms;
    areas.set(area, (areas.get(area) ?? 0) + ms);
    const at = url ? `${areaOf(url, fn)}:${lineNumber + 1}` : area;
    const k = `${fn} ${at}`;
    const e = fns.get(k) ?? { fn, at, ms: 0 };
    e.ms += ms;
    fns.set(k, e);
  }
  const pct = (ms: number) => Math.round((ms / (busy || 1)) * 1000) / 10;
  return {
    totalMs: Math.round(total),
    areas: [...areas]
      .map(([area, ms]) => ({ area, ms: Math.round(ms), pct: pct(ms) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top),
    functions: [...fns.values()]
      .map((f) => ({ ...f, ms: Math.round(f.ms), pct: pct(f.ms) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top),
  };
}

export function formatSummary(s: ProfileSummary, top = 15): string {
  const lines = [`busy time by area (of ${s.totalMs} ms sampled, idle excluded):`];
  for (const a of s.areas.slice(0, top)) lines.push(`  ${a.pct.toFixed(1).padStart(5)}%  ${a.area}`);
  lines.push('self time by function:');
  for (const f of s.functions.slice(0, top)) lines.push(`  ${f.pct.toFixed(1).padStart(5)}%  ${f.fn}  (${f.at})`);
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const f of process.argv.slice(2)) console.log(`${f}\n${formatSummary(summarise(f), 25)}\n`);
}

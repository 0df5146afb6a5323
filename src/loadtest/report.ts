// The load test's report: a JSON document (everything, for scripts) and a self-contained HTML page
// (the summary, the audit and two plots drawn by uPlot, whose code and styles are inlined: the page
// fetches nothing and opens from a file).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { audit, admitted, isRateLimited, WORKSPACE_CODES, type AuditResult } from './audit.js';
import type { LoadTestOptions } from './options.js';
import type { RunResult } from './run.js';

export interface Report {
  generatedAt: string;
  target: {
    /** The rest profile the gateway was loaded as (`--profile`), absent for the workspace API. */
    profile?: string;
    urls: string[];
    keys: number;
    routes: { method: string; path: string; weight: number }[];
    mode: string;
    connections: number;
    duration: number;
  };
  throughput: {
    requests: number;
    answered: number;
    seconds: number;
    perSecond: number;
    errors: Record<string, number>;
    held: number;
  };
  latencyMs: { min: number; p50: number; p90: number; p99: number; p999: number; max: number; mean: number };
  /** Latency histogram: upper bounds in ms, and the answers at or below each (and above the previous). */
  histogram: { le: number; count: number }[];
  answers: { byStatus: Record<string, number>; byCode: Record<string, number>; admitted: number; rateLimited: number };
  /** Per second of the run: answers admitted and refused, and latency percentiles. */
  perSecond: { t: number; admitted: number; refused: number; p50: number | null; p99: number | null }[];
  audit: AuditResult;
}

const BOUNDS = [
  0.5,
  1,
  2,
  3,
  5,
  7.5,
  10,
  15,
  20,
  30,
  50,
  75,
  100,
  150,
  200,
  300,
  500,
  750,
  1000,
  2000,
  5000,
  10000,
  Infinity,
];

const pct = (sorted: Float64Array, p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : 0;
const round = (v: number) => Math.round(v * 100) / 100;

export function buildReport(opts: LoadTestOptions, run: RunResult, now = new Date()): Report {
  const codes = opts.profile?.codes ?? WORKSPACE_CODES;
  const lat = Float64Array.from(run.answers, (a) => a.ms).sort();
  const byStatus: Record<string, number> = {};
  const byCode: Record<string, number> = {};
  const seconds = Math.max(1, Math.ceil(run.seconds));
  const perSecond = Array.from({ length: seconds }, (_, t) => ({ t, admitted: 0, refused: 0, lat: [] as number[] }));
  let admittedCount = 0;
  let rateLimited = 0;
  const histogram = BOUNDS.map((le) => ({ le, count: 0 }));
  for (const a of run.answers) {
    byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
    if (a.code !== null) byCode[a.code] = (byCode[a.code] ?? 0) + 1;
    const ok = admitted(a, codes);
    if (ok) admittedCount++;
    if (isRateLimited(a, codes)) rateLimited++;
    const slot = perSecond[Math.min(seconds - 1, Math.max(0, Math.floor((a.at - run.startedAt) / 1000)))];
    if (ok) slot.admitted++;
    else slot.refused++;
    slot.lat.push(a.ms);
    histogram[BOUNDS.findIndex((b) => a.ms <= b)].count++;
  }
  let sum = 0;
  for (const v of lat) sum += v;
  const errors = Object.values(run.errors).reduce((s, n) => s + n, 0);
  return {
    generatedAt: now.toISOString(),
    target: {
      ...(opts.profile ? { profile: opts.profile.name } : {}),
      urls: opts.urls,
      keys: opts.keys.length,
      routes: opts.routes.map(({ method, path, weight }) => ({ method, path, weight })),
      mode: opts.rate === null ? 'saturating' : `paced at ${opts.rate} req/s`,
      connections: opts.connections,
      duration: opts.duration,
    },
    throughput: {
      requests: run.answers.length + errors,
      answered: run.answers.length,
      seconds: round(run.seconds),
      perSecond: round(run.answers.length / run.seconds),
      errors: run.errors,
      held: run.held,
    },
    latencyMs: {
      min: round(lat[0] ?? 0),
      p50: round(pct(lat, 0.5)),
      p90: round(pct(lat, 0.9)),
      p99: round(pct(lat, 0.99)),
      p999: round(pct(lat, 0.999)),
      max: round(lat[lat.length - 1] ?? 0),
      mean: round(lat.length ? sum / lat.length : 0),
    },
    histogram: histogram.filter((h) => h.count > 0).map((h) => ({ le: h.le === Infinity ? -1 : h.le, count: h.count })),
    answers: { byStatus, byCode, admitted: admittedCount, rateLimited },
    perSecond: perSecond.map((s) => {
      const sorted = Float64Array.from(s.lat).sort();
      // A second without answers has no latency: a gap in the plot, not a zero.
      return {
        t: s.t,
        admitted: s.admitted,
        refused: s.refused,
        p50: sorted.length ? round(pct(sorted, 0.5)) : null,
        p99: sorted.length ? round(pct(sorted, 0.99)) : null,
      };
    }),
    audit: audit(run.answers, undefined, undefined, opts.profile),
  };
}

/** One paragraph for the terminal. */
export function summaryText(r: Report): string {
  const l = r.latencyMs;
  const lines = [
    `${r.throughput.answered} answers in ${r.throughput.seconds} s (${r.throughput.perSecond}/s), ${r.target.mode}, ${r.target.urls.length} URL(s), ${r.target.keys} key(s)`,
    `latency ms: p50 ${l.p50}  p90 ${l.p90}  p99 ${l.p99}  p99.9 ${l.p999}  max ${l.max}`,
    `status: ${Object.entries(r.answers.byStatus)
      .map(([s, n]) => `${s} ${n}`)
      .join('  ')}` +
      (Object.keys(r.answers.byCode).length
        ? `   codes: ${Object.entries(r.answers.byCode)
            .map(([c, n]) => `${c} ${n}`)
            .join('  ')}`
        : ''),
  ];
  const errs = Object.entries(r.throughput.errors);
  if (errs.length) lines.push(`no answer: ${errs.map(([e, n]) => `${e} ${n}`).join('  ')}`);
  const a = r.audit;
  lines.push(
    a.ok
      ? `exactness audit: PASS (${a.windows.length} windows, ${a.refusals} rate-limit refusals, ${a.retriesInFreshWindow}/${a.retriesHonoured} honoured Retry-After reached a fresh window)`
      : `exactness audit: FAIL, ${a.violations.length} violation(s):\n${a.violations
          .slice(0, 10)
          .map((v) => `  ${v.kind}: ${v.subject}: ${v.detail}`)
          .join('\n')}`,
  );
  return lines.join('\n');
}

function uplotAssets(): { js: string; css: string } {
  const require = createRequire(import.meta.url);
  const dir = require.resolve('uplot/package.json').replace(/package\.json$/, 'dist/');
  return { js: readFileSync(dir + 'uPlot.iife.min.js', 'utf8'), css: readFileSync(dir + 'uPlot.min.css', 'utf8') };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** JSON inside a <script> element: nothing in it may close the element. */
const scriptJson = (v: unknown) =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

export function reportHtml(r: Report): string {
  const { js, css } = uplotAssets();
  const rows = (o: Record<string, number>) =>
    Object.entries(o)
      .map(([k, n]) => `<tr><td>${escapeHtml(k)}</td><td>${n}</td></tr>`)
      .join('');
  const a = r.audit;
  const violations = a.violations.length
    ? `<table><tr><th>kind</th><th>subject</th><th>window end</th><th>detail</th></tr>${a.violations.map((v) => `<tr><td>${v.kind}</td><td>${escapeHtml(v.subject)}</td><td>${v.reset ?? ''}</td><td>${escapeHtml(v.detail)}</td></tr>`).join('')}</table>`
    : '';
  const windows = a.windows
    .slice(0, 200)
    .map(
      (w) =>
        `<tr><td>${w.layer}</td><td>${escapeHtml(w.subject)}</td><td>${new Date(w.reset * 1000).toISOString().slice(11, 19)}</td><td>${w.limit}</td><td>${w.admitted}</td><td>${w.refused}</td><td>${w.admitted <= w.limit && !w.duplicates.length && !w.outOfRange.length ? 'ok' : 'VIOLATED'}</td></tr>`,
    )
    .join('');
  const l = r.latencyMs;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>keygate load test ${escapeHtml(r.generatedAt)}</title>
<style>${css}
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem auto;max-width:1100px;padding:0 1rem;color:#1d232a}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}table{border-collapse:collapse;margin:.5rem 0}
td,th{border:1px solid #cfd6de;padding:.2rem .6rem;text-align:left}th{background:#f1f4f7}
.pass{color:#116329;font-weight:600}.fail{color:#b42318;font-weight:600}.grid{display:flex;flex-wrap:wrap;gap:2rem}
</style></head><body>
<h1>keygate load test</h1>
<p>${escapeHtml(r.generatedAt)}: ${r.target.urls.map(escapeHtml).join(', ')}; ${r.target.keys} key(s); ${escapeHtml(r.target.mode)}; ${r.target.connections} connection(s) per URL; ${r.target.duration} s;
routes ${r.target.routes.map((x) => `${x.method} ${escapeHtml(x.path)} ×${x.weight}`).join(', ')}</p>
<p>${r.throughput.answered} answers in ${r.throughput.seconds} s: <b>${r.throughput.perSecond} per second</b>; latency ms p50 ${l.p50}, p90 ${l.p90}, p99 ${l.p99}, p99.9 ${l.p999}, max ${l.max}, mean ${l.mean}.</p>
<p>Exactness audit: ${a.ok ? '<span class="pass">PASS</span>' : `<span class="fail">FAIL (${a.violations.length})</span>`}: ${a.windows.length} windows,
${a.refusals} rate-limit refusals, ${a.retriesInFreshWindow} of ${a.retriesHonoured} requests sent after honouring Retry-After answered from a fresh window.</p>
${violations}
<h2>Latency over time (ms)</h2><div id="lat"></div>
<h2>Admitted and refused per second</h2><div id="adm"></div>
<div class="grid">
<div><h2>Answers by status</h2><table><tr><th>status</th><th>answers</th></tr>${rows(r.answers.byStatus)}</table></div>
<div><h2>By error code</h2><table><tr><th>code</th><th>answers</th></tr>${rows(r.answers.byCode)}</table></div>
<div><h2>Latency histogram</h2><table><tr><th>≤ ms</th><th>answers</th></tr>${r.histogram.map((h) => `<tr><td>${h.le < 0 ? 'more' : h.le}</td><td>${h.count}</td></tr>`).join('')}</table></div>
</div>
<h2>Windows (first 200)</h2>
<table><tr><th>layer</th><th>subject</th><th>window end (UTC)</th><th>budget</th><th>admitted</th><th>refused</th><th>exact</th></tr>${windows}</table>
<script>${js}</script>
<script>
const data = ${scriptJson(r.perSecond)};
const run = ${scriptJson({ seconds: r.perSecond.length, p50: l.p50, p99: l.p99, admitted: r.answers.admitted, refused: r.throughput.answered - r.answers.admitted })};
const t = data.map((d) => d.t);
const width = () => Math.min(1060, document.body.clientWidth - 20);
// A page read without a pointer over the plot: the legend shows the whole run's figure, not uPlot's "--".
const legend = (whole, unit) => (u, v, si, idx) => (idx == null ? whole : v == null ? 'none' : v + unit);
const from0 = (u, min, max) => [0, Math.max(1, max)];
new uPlot({ width: width(), height: 260, scales: { x: { time: false } }, axes: [{ label: 's' }, { label: 'ms' }],
  series: [{ label: 's', value: legend(run.seconds + ' s in all', ' s') },
    { label: 'p50', stroke: '#2f6fb0', value: legend(run.p50 + ' ms over the run', ' ms') },
    { label: 'p99', stroke: '#c2410c', value: legend(run.p99 + ' ms over the run', ' ms') }] },
  [t, data.map((d) => d.p50), data.map((d) => d.p99)], document.getElementById('lat'));
// Admitted and refused each on a scale of its own (left and right): refusals by the thousand would
// otherwise flatten a budget of a few admitted a second onto the floor.
new uPlot({ width: width(), height: 260, scales: { x: { time: false }, adm: { range: from0 }, ref: { range: from0 } },
  axes: [{ label: 's' }, { scale: 'adm', label: 'admitted per second' },
    { scale: 'ref', side: 1, label: 'refused per second', grid: { show: false } }],
  series: [{ label: 's', value: legend(run.seconds + ' s in all', ' s') },
    { label: 'admitted', stroke: '#116329', scale: 'adm', value: legend(run.admitted + ' in all', '/s') },
    { label: 'refused', stroke: '#b42318', scale: 'ref', value: legend(run.refused + ' in all', '/s') }] },
  [t, data.map((d) => d.admitted), data.map((d) => d.refused)], document.getElementById('adm'));
</script>
</body></html>
`;
}

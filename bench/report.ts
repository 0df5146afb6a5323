// The table of a suite run (stdout and RESULTS.md) and its JSON file under bench/results/.
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { SuiteResult } from './suite.js';
import { formatSummary } from './profile.js';

const f = (v: number | null | undefined, d: number) => (v === null || v === undefined ? '-' : v.toFixed(d));

export function table(r: SuiteResult): string {
  const bare = r.scenarios.find((s) => s.name === 'bare-proxy');
  const head = [
    'scenario',
    'req/s',
    'x bare',
    'p50 ms',
    'p99 ms',
    'errors',
    'non-2xx',
    'redis rt/req',
    'redis cmds/req',
    'no-redis calls',
    'hop CPU µs/req',
    'redis CPU µs/req',
    'gw RSS / peak / heap MB',
  ];
  const rows = r.scenarios.map((s) =>
    s.skipped
      ? [s.title, `skipped: ${s.skipped}`, '', '', '', '', '', '', '', '', '', '']
      : [
          s.title,
          f(s.rps, 0),
          bare && bare.rps > 0 ? f(s.rps / bare.rps, 2) : '-',
          f(s.p50, 2),
          f(s.p99, 2),
          String(s.errors),
          String(s.non2xx),
          f(s.redisRoundTrips, 2),
          f(s.redisCommands, 2),
          s.degradedCalls === null ? '-' : String(s.degradedCalls),
          f(s.hopCpuMicrosPerRequest, 0),
          f(s.redisCpuMicrosPerRequest, 0),
          s.gatewayRssMB === null
            ? '-'
            : `${f(s.gatewayRssMB, 0)} / ${f(s.gatewayPeakRssMB, 0)} / ${f(s.gatewayHeapUsedMB, 0)}`,
        ],
  );
  const lines = [
    markdownTable(head, rows),
    '',
    markdownTable(
      ['target', 'goal', 'measured', 'result'],
      r.targets.map((t) => [t.name, t.goal, t.display, t.pass === null ? 'not run' : t.pass ? 'PASS' : 'FAIL']),
    ),
  ];
  return lines.join('\n');
}

function markdownTable(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    '| ' + cells.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join(' | ') + ' |';
  return [
    line(head),
    '|' + w.map((n, i) => (i === 0 ? ':' + '-'.repeat(n + 1) : '-'.repeat(n + 1) + ':')).join('|') + '|',
    ...rows.map(line),
  ].join('\n');
}

export function profiles(r: SuiteResult): string {
  return r.scenarios
    .filter((s) => s.profile)
    .map((s) => `${s.title} (${s.profile!.file}):\n${formatSummary(s.profile!.summary)}`)
    .join('\n\n');
}

/** Write <dir>/<timestamp>.json and <dir>/latest.json; returns the first path. */
export function writeJson(dir: string, r: SuiteResult): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${r.startedAt.replace(/[:.]/g, '-')}.json`);
  const text = JSON.stringify(r, null, 2) + '\n';
  writeFileSync(file, text);
  writeFileSync(join(dir, 'latest.json'), text);
  return file;
}

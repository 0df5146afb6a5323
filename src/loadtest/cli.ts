// `npm run loadtest -- --url ... --key ...` (and `node dist/loadtest/cli.js` in the image): load a running
// keygate, print a live progress line, then the summary; write report.json and report.html. Exit code 0
// when the exactness audit passed, 1 when it found a violation, 2 for bad arguments.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { LOADTEST_USAGE, parseOptions, UsageError } from './options.js';
import { ConfigError } from '../config/errors.js';
import { buildReport, reportHtml, summaryText } from './report.js';
import { runLoad } from './run.js';

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(LOADTEST_USAGE);
    return 0;
  }
  let opts;
  try {
    opts = parseOptions(argv);
  } catch (err) {
    // A mistake in --profile's file is the line a start would stop with (docs/profiles.md, Mistakes).
    if (err instanceof ConfigError && !(err instanceof UsageError)) {
      process.stderr.write(`loadtest: ${err.message}\n`);
      return 2;
    }
    if (!(err instanceof UsageError)) throw err;
    // One line (docs/loadtest.md): the message, and where the options are listed.
    process.stderr.write(`loadtest: ${err.message.replace(/\s*\n\s*/g, ' ')} (see --help)\n`);
    return 2;
  }
  const tty = process.stderr.isTTY === true;
  const run = await runLoad(
    opts,
    opts.progress
      ? (p) => {
          const classes = Object.entries(p.byClass)
            .map(([c, n]) => `${c} ${n}`)
            .join('  ');
          const line = `${p.seconds.toFixed(0).padStart(4)} s  ${String(p.rate).padStart(6)} req/s  p50 ${p.p50.toFixed(1)} ms  p99 ${p.p99.toFixed(1)} ms  ${classes}  no answer ${p.errors}`;
          process.stderr.write(tty ? `\r\x1b[K${line}` : `${line}\n`);
        }
      : undefined,
  );
  if (opts.progress && tty) process.stderr.write('\n');
  const report = buildReport(opts, run);
  const dir = resolve(opts.outDir);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'report.json'), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(join(dir, 'report.html'), reportHtml(report));
  process.stdout.write(`${summaryText(report)}\nreport: ${join(dir, 'report.html')} (and report.json)\n`);
  return report.audit.ok ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err) => {
    process.stderr.write(`loadtest: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);

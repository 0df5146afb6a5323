// V8's view of the `process.nextTick` literal (src/ops/tick-shape.ts), for the test and the bench
// diagnostic that check it: a node process run with V8's natives syntax prints
// `%DebugPrint(process.nextTick)`, and the states of the literal's property-definition slots are read
// from that print.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The statement a script ends with to print V8's view of process.nextTick. */
export const PRINT_NEXT_TICK = `new Function('f', '%DebugPrint(f)')(process.nextTick);`;

/**
 * Run node (with tsx, natives syntax and `gc()`) on `args`, and return what it printed. The output goes
 * to a file: V8 prints through C's stdio, which a pipe to this process cut short.
 */
export function runWithNatives(args: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'v8-feedback-'));
  const file = join(dir, 'out.txt');
  const fd = openSync(file, 'w');
  try {
    execFileSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--import', 'tsx', ...args], {
      stdio: ['ignore', fd, 'inherit'],
      timeout: 120_000,
    });
    return readFileSync(file, 'utf8');
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The states (MONOMORPHIC, MEGAMORPHIC, ...) of the tick literal's four slots in that print; [] if absent. */
export function tickLiteralFeedback(out: string): string[] {
  return [...out.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]).slice(0, 4);
}

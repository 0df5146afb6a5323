import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// CI shows the end of what `.ci/run` printed; its tally must name what failed there.
const TALLY = resolve(__dirname, '../../.ci/tally.mjs');
const dir = mkdtempSync(join(tmpdir(), 'keygate-tally-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function report(name: string, body: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(body));
  return path;
}

function tally(...args: string[]): string[] {
  return execFileSync(process.execPath, [TALLY, ...args], { cwd: resolve(__dirname, '../..'), encoding: 'utf8' })
    .trimEnd()
    .split('\n');
}

const green = report('green.json', {
  success: true,
  numPassedTests: 5,
  numFailedTests: 0,
  testResults: [{ name: resolve(__dirname, 'a.test.ts'), status: 'passed', assertionResults: [] }],
});

describe('.ci/tally.mjs', () => {
  it('prints only the count when everything passed', () => {
    expect(tally('0', '0', green)).toEqual(['5 passed, 0 failed']);
  });

  it('names each failed test with the head of its error, before the count that ends the output', () => {
    const red = report('red.json', {
      success: false,
      numPassedTests: 3,
      numFailedTests: 1,
      testResults: [
        {
          name: resolve(__dirname, '../ops/redis-outage.test.ts'),
          status: 'failed',
          assertionResults: [
            {
              fullName: 'outage > recovers',
              status: 'failed',
              failureMessages: ['AssertionError: expected 1 to be 2\n  at x.ts:1'],
            },
            { fullName: 'outage > starts', status: 'passed', failureMessages: [] },
          ],
        },
        {
          name: resolve(__dirname, '../ops/broken.test.ts'),
          status: 'failed',
          message: 'SyntaxError: bad',
          assertionResults: [],
        },
      ],
    });
    const lines = tally('0', '0', green, red);
    expect(lines.at(-1)).toBe('8 passed, 2 failed');
    expect(lines[0]).toBe('[ci] what failed:');
    expect(lines).toContain(`  ${red} test/ops/redis-outage.test.ts > outage > recovers`);
    expect(lines).toContain('      AssertionError: expected 1 to be 2');
    expect(lines).toContain(`  ${red} test/ops/broken.test.ts: the file failed`);
    expect(lines.join('\n')).not.toContain('outage > starts');
  });

  it('counts a run that failed outside its tests once', () => {
    const unhandled = report('unhandled.json', {
      success: false,
      numPassedTests: 2,
      numFailedTests: 0,
      testResults: [],
    });
    const lines = tally('0', '0', unhandled);
    expect(lines).toEqual([
      '[ci] what failed:',
      `  ${unhandled}: the run failed outside its tests (see its output above)`,
      '2 passed, 1 failed',
    ]);
  });

  it('counts a missing report, a failed type check and a failed lint', () => {
    const lines = tally('2', '1', green, join(dir, 'absent.json'));
    expect(lines.at(-1)).toBe('5 passed, 3 failed');
    expect(lines).toContain(`  ${join(dir, 'absent.json')}: no report (ENOENT)`);
    expect(lines).toContain('  tsc --noEmit failed (its errors are above)');
    expect(lines).toContain('  npm run lint failed (its errors are above)');
  });
});

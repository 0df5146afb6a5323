// CI's last lines: each failed test by pass, file and name with the head of its error, then
// "N passed, N failed". CI shows only the end of what it printed, so the names of what failed
// must come last, not scattered through three passes' progress.
// Usage: node .ci/tally.mjs TSC_RC LINT_RC RESULTS.json...
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [tscRc, lintRc, ...files] = process.argv.slice(2);
const HEAD_LINES = 6;
let passed = 0;
let failed = 0;
const lines = [];

function head(text) {
  return String(text)
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(0, HEAD_LINES)
    .map((line) => `      ${line.slice(0, 300)}`);
}

for (const file of files) {
  let report;
  try {
    report = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    failed += 1;
    lines.push(`  ${file}: no report (${error.code ?? error.message})`);
    continue;
  }
  passed += report.numPassedTests;
  let failedHere = report.numFailedTests;
  for (const suite of report.testResults ?? []) {
    const name = relative(process.cwd(), suite.name);
    const failures = (suite.assertionResults ?? []).filter((test) => test.status === 'failed');
    for (const test of failures) {
      lines.push(`  ${file} ${name} > ${test.fullName}`, ...head((test.failureMessages ?? []).join('\n')));
    }
    if (failures.length === 0 && suite.status === 'failed') {
      failedHere += 1;
      lines.push(`  ${file} ${name}: the file failed`, ...head(suite.message ?? ''));
    }
  }
  // An error outside every test (an unhandled rejection, say) fails the run and names no test.
  if (!report.success && failedHere === 0) {
    failedHere = 1;
    lines.push(`  ${file}: the run failed outside its tests (see its output above)`);
  }
  failed += failedHere;
}
if (Number(tscRc) !== 0) {
  failed += 1;
  lines.push('  tsc --noEmit failed (its errors are above)');
}
if (Number(lintRc) !== 0) {
  failed += 1;
  lines.push('  npm run lint failed (its errors are above)');
}
if (lines.length > 0) console.log(['[ci] what failed:', ...lines].join('\n'));
console.log(`${passed} passed, ${failed} failed`);

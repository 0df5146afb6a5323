// src/ops/heap-tuning.ts: allocation-site pretenuring is off once tuneHeap() ran, even though V8
// started with it on. Checked with V8's own trace in a child process: the same allocations (objects
// from one site that outlive young-generation collections, what in-flight requests do under a burst)
// make V8 report pretenuring decisions without the call, and none with it.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const MODULE = fileURLToPath(new URL('../../src/ops/heap-tuning.ts', import.meta.url));

function pretenuringLines(tune: boolean): number {
  const script = `
    const { tuneHeap } = await import(${JSON.stringify(MODULE)});
    if (${tune}) tuneHeap();
    const kept = [];
    const make = (i) => ({ id: i, pair: [i, i + 1], name: 'r' + i });
    for (let round = 0; round < 60; round++) {
      for (let i = 0; i < 20000; i++) kept.push(make(i));
      if (kept.length > 200000) kept.splice(0, 100000);
    }
  `;
  const out = execFileSync(process.execPath, ['--trace-pretenuring', '--trace-pretenuring-statistics', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  return out.split('\n').filter((l) => l.includes('pretenuring:')).length;
}

describe('heap tuning', () => {
  it('V8 makes pretenuring decisions without it (the control)', () => {
    expect(pretenuringLines(false)).toBeGreaterThan(0);
  });

  it('turns allocation-site pretenuring off at run time', () => {
    expect(pretenuringLines(true)).toBe(0);
  });
});

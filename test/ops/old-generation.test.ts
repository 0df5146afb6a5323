// The old generation grows by a fifth between full collections (src/ops/v8-flags.ts): V8's own factor,
// up to 4 with a large heap limit, left a gateway holding up to 150 MB of garbage after the many-keys
// load (bench/RESULTS.md). With `--trace-gc-verbose` V8 prints, after each full collection, the limit it
// set for the next one with its factor: `[HeapController] Limit: old size: N KB, new limit: M KB (F)`.
// The real program is given a workload that grows its old generation (test/fixtures/old-growth-workload.mjs,
// started once the program is ready, so that its start-up does not count; it ends with a full collection,
// so that at least one limit is set while it runs). Naming the flag on node's
// command line keeps V8's own choice, and the second program shows that the test sees it.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { forwardingPrograms, runWorkload } from '../helpers/forwarding.js';

const WORKLOAD = fileURLToPath(new URL('../fixtures/old-growth-workload.mjs', import.meta.url));
const startProgram = forwardingPrograms();

/** The growing factors V8 printed for the old generation's limits from `fromMs` on (V8's clock). */
function factorsFrom(output: string, fromMs: number): number[] {
  const out: number[] = [];
  for (const line of output.split('\n')) {
    const m = /\s(\d+) ms: \[HeapController\] Limit: old size: \d+ KB, new limit: \d+ KB \(([\d.]+)\)/.exec(line);
    if (m && Number(m[1]) >= fromMs) out.push(Number(m[2]));
  }
  return out;
}

async function run(nodeArgs: string[] = []): Promise<number[]> {
  const program = await startProgram(['--trace-gc-verbose', '--expose-gc', `--import=${WORKLOAD}`, ...nodeArgs]);
  const { output, fromMs } = await runWorkload(program, 'old growth');
  return factorsFrom(output, fromMs);
}

describe('the old generation', () => {
  it('grows by a fifth between full collections', async () => {
    const factors = await run();
    expect(factors.length).toBeGreaterThan(0);
    expect(factors.filter((f) => f !== 1.2)).toEqual([]);
  }, 120_000);

  it("with the flag named on the command line, V8's own factor applies (and this test sees it)", async () => {
    const factors = await run(['--heap-growing-percent=0']);
    expect(factors.length).toBeGreaterThan(0);
    expect(factors.some((f) => f > 1.2)).toBe(true);
  }, 120_000);
});

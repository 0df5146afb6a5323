// Young collections run on the main thread alone (src/ops/v8-flags.ts): a gateway's young collection keeps
// only the requests in flight, and splitting it among V8's helper threads cost more CPU per request
// than it saved (bench/RESULTS.md, `4a6145b`). `--trace-parallel-scavenge` prints one line per scavenger
// that took part in a young collection, before the collection's `--trace-gc` line, so a collection
// with helpers prints several. The program is given a workload with much to keep
// (test/fixtures/survivors-workload.mjs, started once it is ready, so that what ran before its first
// import does not count), where helpers take part if they may: with the setting, each collection has
// one scavenger. Naming the flag on node's command line keeps V8's default, and the second program
// shows that the test sees the helpers.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { forwardingPrograms, runWorkload } from '../helpers/forwarding.js';

const WORKLOAD = fileURLToPath(new URL('../fixtures/survivors-workload.mjs', import.meta.url));
const startProgram = forwardingPrograms();

/** The young collections from `fromMs` on (V8's clock), each with the scavengers that took part. */
function scavengesFrom(output: string, fromMs: number): string[][] {
  const out: string[][] = [];
  let ids: string[] = [];
  for (const line of output.split('\n')) {
    const id = /scavenge\[(0x[0-9a-f]+)\]: time=/.exec(line);
    if (id) ids.push(id[1]);
    const gc = /\s(\d+) ms: Scavenge/.exec(line);
    if (gc) {
      if (Number(gc[1]) >= fromMs) out.push(ids);
      ids = [];
    }
  }
  return out;
}

async function run(nodeArgs: string[] = []): Promise<string[][]> {
  const program = await startProgram(['--trace-gc', '--trace-parallel-scavenge', `--import=${WORKLOAD}`, ...nodeArgs]);
  const { output, fromMs } = await runWorkload(program, 'survivors');
  return scavengesFrom(output, fromMs);
}

describe('young collections', () => {
  it('run on one scavenger, the main thread', async () => {
    const scavenges = await run();
    expect(scavenges.length).toBeGreaterThan(10);
    // One scavenger line per collection (its address may differ from one collection to the next).
    expect(scavenges.filter((ids) => ids.length !== 1)).toEqual([]);
  }, 120_000);

  it('with the flag named on the command line, helpers take part as by default (and this test sees it)', async () => {
    const scavenges = await run(['--parallel-scavenge']);
    expect(scavenges.some((ids) => ids.length > 1)).toBe(true);
  }, 120_000);
});

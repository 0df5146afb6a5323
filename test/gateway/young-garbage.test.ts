// What a forwarded request leaves behind once answered must die in V8's young generation. A gateway whose
// finished requests are promoted to the old generation pays for it on every young collection (each
// copies the survivors) and with a full collection every second or two under load: the CPU per request
// and the p99 of the hop (bench/RESULTS.md, "finished requests no longer outlive the young generation"). The real program runs
// with `--trace-gc-nvp`, which prints what each young collection promoted; under a steady load the
// bytes promoted per request stay near nothing (the bare proxy's), not the few kilobytes of a whole
// request's objects.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Program } from '../helpers/program.js';
import { forwardingPrograms, loadTags } from '../helpers/forwarding.js';

const startProgram = forwardingPrograms();
let program: Program & { port: number };

beforeAll(async () => {
  program = await startProgram(['--trace-gc-nvp']);
}, 90_000);

const load = (n: number, connections: number, offset: number) =>
  loadTags(program.port, n, { connections, subnet: '10.1', offset });

/** The bytes promoted by each young collection (`gc=s`) printed so far, from line `from` on. */
function promoted(from: number): { collections: number; bytes: number; lines: number } {
  const lines = program
    .output()
    .split('\n')
    .filter((l) => l.includes(' gc=s '));
  const bytes = lines.slice(from).reduce((sum, l) => sum + Number(/ promoted=(\d+)/.exec(l)?.[1] ?? 0), 0);
  return { collections: lines.length - from, bytes, lines: lines.length };
}

describe('young garbage', () => {
  it('a forwarded request leaves next to nothing for the old generation', async () => {
    // Warm-up: compilation, the caches, the pools.
    expect(new Set(await load(1500, 8, 0))).toEqual(new Set([200]));
    const before = promoted(0).lines;
    const n = 6000;
    expect(new Set(await load(n, 8, 1500))).toEqual(new Set([200]));
    const { collections, bytes } = promoted(before);
    expect(collections).toBeGreaterThanOrEqual(3);
    // About 5 KB a request when every finished request outlived a young collection; a young
    // collection that finds only the requests in flight promotes a few hundred bytes per request at most.
    expect(bytes / n, `${bytes} bytes promoted by ${collections} young collections`).toBeLessThan(800);
  }, 120_000);
});

// V8 settings the process applies to itself before anything else is loaded (the entry imports this
// module first: ES modules are evaluated in the order they are imported).
//
// Allocation-site pretenuring off. At each young collection V8 counts how many of the objects made by
// each object or array literal survived; a literal whose objects nearly all survived (at least 100 of
// them) is "tenured", and optimized code then makes its objects directly in the old generation. Every
// gateway process tenured 5 to 49 literals that way: at start-up, where everything made lives on, and
// at its first bursts of load, where every request in flight survives. A literal also made once per
// request then stays tenured, each request's object is old from birth, and the young objects it points
// to (the rest of the request) outlive every young collection until the next full one: 2 to 3 MB kept
// and promoted a young collection instead of 0.1 to 0.3, a full collection every 1 to 2 s, for the
// rest of the process's life (bench/RESULTS.md, "the high-promotion state": about one process in ten,
// seven in nine after a first burst of 400 connections; none of the processes run with this setting).
// A proxy's per-request objects die young; what start-up makes is copied once more instead.
//
// Parallel scavenging off. V8 splits a young collection among helper threads (up to node's four
// platform workers and the main thread) when there is enough to do. What a gateway's young collection
// keeps is small (the requests in flight, 80 to 200 KB), so the split buys little pause time and costs
// the waking, dividing and joining of the helpers: with the main thread scavenging alone, the CPU per
// request was 0.94 to 1.06 × (median 0.976, 12 of 14 below 1) in 14 interleaved pairs of processes,
// saturated and paced, with no change to the p99 (bench/RESULTS.md, `4a6145b`). A young collection of a
// burst (4 to 5 MB kept) then takes a few milliseconds on one thread.
//
// The old generation grows by a fifth over what survived its last full collection before the next one
// (V8's heap growing factor 1.2). V8 chooses that factor itself from its collection and mutator speeds,
// up to 4 when the heap limit is large (the default limit is sized from the machine's memory, not from
// what a sidecar is given): after the many-keys load, where about 38 MB are live, a gateway held 142 to
// 196 MB in three starts, the rest garbage not yet collected, and how much depended on when its last full
// collection happened to run. With 1.2 it held 136 to 144 MB, peak included, and the CPU per request
// did not move (0.98 to 1.04 × in five rounds of interleaved pairs): a gateway's old generation grows
// slowly (cached principals, counters' ids), so the extra full collections are few (bench/RESULTS.md,
// "the old generation's slack").
//
// `node --allocation-site-pretenuring dist/cli.js ...` (or `--parallel-scavenge`, or
// `--heap-growing-percent=0` for V8's own choice) keeps V8's default: an operator who names a flag gets
// what they named (NODE_OPTIONS does not take V8 flags of this kind).
import v8 from 'node:v8';

/** Whether node was started with the flag named, either way (`--x`, `--no-x`, `--x=...`); `-` and `_` alike. */
function named(flag: string): boolean {
  const pattern = new RegExp(`^--(no-)?${flag.replace(/-/g, '[-_]')}(=|$)`);
  return process.execArgv.some((arg) => pattern.test(arg));
}

for (const flag of ['allocation-site-pretenuring', 'parallel-scavenge'])
  if (!named(flag)) v8.setFlagsFromString(`--no-${flag}`);

/** The old generation's growth between full collections, in per cent of what survived the last one. */
const HEAP_GROWING_PERCENT = 20;
if (!named('heap-growing-percent')) v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);

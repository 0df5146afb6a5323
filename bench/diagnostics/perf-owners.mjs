// Where a gateway's CPU goes, by owner: each `perf` sample is charged to the innermost frame of its stack
// that belongs to a dependency (node_modules/<name>), to one of keygate's compiled files (dist/... or
// bench/.build/<name>/...), or to node's HTTP code (node:_http_*), with the share of it spent in the
// kernel (a system call under it). Samples with no such frame are node's event loop, its other internals
// and the garbage collector. Node's own stream code is charged to whoever called it, which is what
// the question "what does undici cost" needs; a garbage collection is charged to the collector, not to
// the code whose allocation set it off.
//
//   node --perf-basic-prof dist/cli.js gateway &      # JS frames named in perf's samples
//   perf record -F 999 -g -p <pid> -o perf.data -- sleep 10     # under load
//   perf script -i perf.data -F ip,sym > perf.txt
//   node bench/diagnostics/perf-owners.mjs perf.txt [files=12]
import { readFileSync } from 'node:fs';

const [file, topFiles = '12'] = process.argv.slice(2);
const text = readFileSync(file, 'utf8');

/** The owner of one frame's symbol, or null when it is not one. */
function ownerOf(sym) {
  if (!sym.startsWith('JS:')) return null;
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(sym);
  if (dep) return { group: dep[1], file: null };
  const own = /\/(?:dist|bench\/\.build\/[^/]+)\/([^:]+\.js)/.exec(sym);
  if (own) return { group: 'keygate', file: own[1] };
  if (/node:_http_/.test(sym)) return { group: 'node:http', file: null };
  return null;
}

const GC = /Scaveng|MarkCompact|Heap::CollectGarbage|ConcurrentMarking|Heap::PerformGarbageCollection/;
const groups = new Map();
const files = new Map();
let total = 0;
let kernelTotal = 0;
const add = (map, key, kernel) => {
  const e = map.get(key) ?? { n: 0, kernel: 0 };
  e.n++;
  if (kernel) e.kernel++;
  map.set(key, e);
};
for (const block of text.split(/\n\s*\n/)) {
  const frames = block
    .split('\n')
    .map((l) => l.trim().split(/\s+/).slice(1).join(' '))
    .filter(Boolean);
  if (frames.length === 0) continue;
  total++;
  const kernel = frames.some((f) => f.startsWith('entry_SYSCALL'));
  if (kernel) kernelTotal++;
  // A collection is charged to the collector, whoever's allocation set it off.
  let owner = null;
  let gc = false;
  for (const f of frames) {
    if ((gc = GC.test(f))) break;
    if ((owner = ownerOf(f))) break;
  }
  add(groups, gc ? '(garbage collector)' : (owner?.group ?? '(event loop, node internals)'), kernel);
  if (owner?.file) add(files, owner.file, kernel);
}
const pct = (n) => ((100 * n) / total).toFixed(1).padStart(5);
console.log(`${total} samples, ${pct(kernelTotal)} % in the kernel`);
console.log('share  (of it kernel)  owner');
for (const [k, e] of [...groups].sort((a, b) => b[1].n - a[1].n))
  console.log(`${pct(e.n)} % (${pct(e.kernel)} %)  ${k}`);
console.log("keygate's files:");
for (const [k, e] of [...files].sort((a, b) => b[1].n - a[1].n).slice(0, Number(topFiles)))
  console.log(`${pct(e.n)} % (${pct(e.kernel)} %)  ${k}`);

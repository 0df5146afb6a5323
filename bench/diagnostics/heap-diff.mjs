// Two V8 heap snapshots (.heapsnapshot, e.g. from bench/diagnostics/gateway-rss.ts with RSS_SNAPSHOT=1)
// compared by constructor: for each (node type, name) the count and the self size in each, and the
// difference, largest growth first. Names of strings and of arrays are V8's own categories
// ("(string)", "(array)", "(concatenated string)", ...).
//   node bench/diagnostics/heap-diff.mjs before.heapsnapshot after.heapsnapshot [rows (40)]
// With one file: its largest constructors. HEAP_DIFF_EDGES=Name also lists, for the objects of that
// constructor in the second snapshot, which (type, name) of holder points at them, by count.
import { readFileSync } from 'node:fs';

function load(file) {
  const s = JSON.parse(readFileSync(file, 'utf8'));
  const meta = s.snapshot.meta;
  const nf = meta.node_fields;
  const types = meta.node_types[0];
  const width = nf.length;
  const [iType, iName, iSize, iEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => nf.indexOf(f));
  const byKey = new Map();
  const nodes = s.nodes;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + iType]];
    let name = type === 'object' || type === 'closure' || type === 'native' ? s.strings[nodes[i + iName]] : `(${type})`;
    if (type === 'hidden' || type === 'code' || type === 'array')
      name = `(${type}) ${s.strings[nodes[i + iName]]}`.slice(0, 60);
    const key = `${type}\t${name}`;
    const e = byKey.get(key) ?? { count: 0, size: 0 };
    e.count++;
    e.size += nodes[i + iSize];
    byKey.set(key, e);
  }
  return { s, byKey, width, iType, iName, iEdges, types };
}

const mb = (b) => (b / 2 ** 20).toFixed(2);
const [a, b, rowsArg] = process.argv.slice(2);
const rows = Number(rowsArg ?? 40);
const A = load(a);
if (!b) {
  const list = [...A.byKey].sort((x, y) => y[1].size - x[1].size).slice(0, rows);
  for (const [k, v] of list) console.log(`${mb(v.size).padStart(8)} MB ${String(v.count).padStart(8)}  ${k}`);
  process.exit(0);
}
const B = load(b);
const total = (m) => [...m.values()].reduce((t, v) => t + v.size, 0);
console.log(`total self size: ${mb(total(A.byKey))} MB -> ${mb(total(B.byKey))} MB`);
const keys = new Set([...A.byKey.keys(), ...B.byKey.keys()]);
const diff = [...keys].map((k) => {
  const x = A.byKey.get(k) ?? { count: 0, size: 0 };
  const y = B.byKey.get(k) ?? { count: 0, size: 0 };
  return { k, dc: y.count - x.count, ds: y.size - x.size, y };
});
diff.sort((p, q) => q.ds - p.ds);
console.log('   +MB     +count   count after  type / name');
for (const d of diff.slice(0, rows))
  console.log(`${mb(d.ds).padStart(8)} ${String(d.dc).padStart(9)} ${String(d.y.count).padStart(12)}  ${d.k}`);

const target = process.env.HEAP_DIFF_EDGES;
if (target) {
  // Who holds the objects named `target` in the second snapshot.
  const { s, width, iType, iName, iEdges, types } = B;
  const ef = s.snapshot.meta.edge_fields;
  const ew = ef.length;
  const iTo = ef.indexOf('to_node');
  const holders = new Map();
  let e = 0;
  for (let i = 0; i < s.nodes.length; i += width) {
    const n = s.nodes[i + iEdges];
    const holder = `${types[s.nodes[i + iType]]} ${s.strings[s.nodes[i + iName]]}`.slice(0, 80);
    for (let j = 0; j < n; j++, e += ew) {
      const to = s.edges[e + iTo];
      if (s.strings[s.nodes[to + iName]] === target) holders.set(holder, (holders.get(holder) ?? 0) + 1);
    }
  }
  console.log(`\nholders of ${target}:`);
  for (const [h, c] of [...holders].sort((x, y) => y[1] - x[1]).slice(0, 20))
    console.log(`${String(c).padStart(9)}  ${h}`);
}

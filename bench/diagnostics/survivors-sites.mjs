// The allocation sites of a sampling heap profile (bench/diagnostics/survivors-hook.mjs), by sampled
// bytes, each with its first callers: `node bench/diagnostics/survivors-sites.mjs <file> [top=25]`.
import { readFileSync } from 'node:fs';

const [file, top = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const sites = new Map();
let total = 0;
const frame = ({ functionName, url, lineNumber }) =>
  `${functionName || '(anonymous)'} ${url.replace(/.*\/(node_modules|\.build\/[^/]+|dist)\//, '$1/')}:${lineNumber + 1}`;
(function walk(node, callers) {
  const stack = [frame(node.callFrame), ...callers].slice(0, 4);
  total += node.selfSize;
  if (node.selfSize) sites.set(stack.join(' < '), (sites.get(stack.join(' < ')) ?? 0) + node.selfSize);
  for (const child of node.children) walk(child, stack);
})(profile.head, []);
console.log(`sampled ${(total / 1e6).toFixed(1)} MB`);
for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(top)))
  console.log(
    `${(bytes / 1e6).toFixed(2).padStart(7)} MB ${((100 * bytes) / total).toFixed(1).padStart(5)} %  ${site}`,
  );

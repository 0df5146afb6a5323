// Preloaded into a process under test by bench/diagnostics/gateway-rss.ts (`node --import <this> ...`)
// when RSS_HOOK=1: on SIGWINCH (ignored by Node otherwise) it runs a full collection when it can
// (`--expose-gc`) and not otherwise, then appends one line of process.memoryUsage() as JSON to
// MEMORY_HOOK_FILE. It adds no module the program does not load already but node:fs and node:v8.
import { appendFileSync } from 'node:fs';
import v8 from 'node:v8';

const file = process.env.MEMORY_HOOK_FILE;
if (file) {
  process.on('SIGWINCH', () => {
    const before = process.memoryUsage();
    globalThis.gc?.();
    // Per V8 space: used, committed (size) and resident (physical), in bytes.
    const spaces = Object.fromEntries(
      v8.getHeapSpaceStatistics().map((s) => [s.space_name, [s.space_used_size, s.space_size, s.physical_space_size]]),
    );
    appendFileSync(file, JSON.stringify({ at: Date.now(), before, spaces, after: process.memoryUsage() }) + '\n');
  });
}

// What each step of the request path costs (the pipeline's, src/gateway/pipeline.ts): copies of one compiled build, each with one step cut out,
// to load side by side with the build itself in builds-ab.ts (bench/RESULTS.md, "what each step costs").
// A cut answers the same 200 with fewer fields or less work; none is a configuration users have.
//
//   npx tsc -p tsconfig.build.json --outDir bench/.build/cur && cp -r src/db/migrations bench/.build/cur/db/
//   AB_TARGETS="$(node bench/diagnostics/ablate.mjs bench/.build/cur bench/.build/ablate);floor=floor" \
//     AB_ROUNDS=5 AB_DURATION=5 DATABASE_URL=... npx tsx bench/diagnostics/builds-ab.ts
//
// Prints the AB_TARGETS list: `full=<build>/cli.js;<cut>=<copy>/cli.js...`. Each cut edits the compiled
// JavaScript by its text; a pattern that no longer matches exactly once stops the script, so a change of
// the source cannot turn a cut into a silent no-op (test/bench/ablate.test.ts checks the patterns against
// the TypeScript sources, whose lines tsc keeps).
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const CUTS = {
  // The identity signature: a constant instead of the HMAC.
  'no-sign': [['gateway/forward-authorized.js', 'const signature = sign(', "const signature = 'cut' || sign("]],
  // The seven rate-limit fields of the answer.
  'no-limit-fields': [
    [
      'gateway/pipeline.js',
      'addRateLimitFields(ctx.head, iface.spec.headers, limitOutcome(',
      'false && addRateLimitFields(ctx.head, iface.spec.headers, limitOutcome(',
    ],
  ],
  // Forwarded and X-Forwarded-For, -Proto and -Host to the upstream.
  'no-forwarding': [['gateway/forward-authorized.js', 'forwardingFields(deps, ctx, out);', 'void 0;']],
  // The request's metrics (count and latency histogram).
  'no-metrics': [['gateway/server.js', 'deps.metrics.request(', 'false && deps.metrics.request(']],
  // The access resolver after the first request: its answer reused, so no cache lookup, no gate
  // batch, no Redis round trip (every request admitted with the same counts).
  'no-gate': [
    [
      'gateway/pipeline.js',
      /const access = (await [^;]+);/,
      'const access = globalThis.__cutAccess ?? (globalThis.__cutAccess = $1);',
    ],
  ],
};

/** `text` with one cut applied; throws unless its pattern matches exactly once. */
export function applyCut(text, pattern, replacement, where) {
  const matches =
    typeof pattern === 'string' ? text.split(pattern).length - 1 : (text.match(new RegExp(pattern, 'g')) ?? []).length;
  if (matches !== 1)
    throw new Error(
      `${where}: ${pattern} matches ${matches} times (expected once): update bench/diagnostics/ablate.mjs`,
    );
  return text.replace(pattern, replacement);
}

function main() {
  const [build, out] = process.argv.slice(2).map((p) => p && resolve(p));
  if (!build || !out) {
    console.error('usage: node bench/diagnostics/ablate.mjs <compiled build dir> <output dir>');
    process.exit(2);
  }
  const targets = [`full=${join(build, 'cli.js')}`];
  for (const [name, edits] of Object.entries(CUTS)) {
    const dir = join(out, name);
    rmSync(dir, { recursive: true, force: true });
    cpSync(build, dir, { recursive: true });
    for (const [file, pattern, replacement] of edits) {
      const path = join(dir, file);
      writeFileSync(path, applyCut(readFileSync(path, 'utf8'), pattern, replacement, path));
    }
    targets.push(`${name}=${join(dir, 'cli.js')}`);
  }
  console.log(targets.join(';'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();

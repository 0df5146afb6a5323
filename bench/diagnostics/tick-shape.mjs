// Diagnostic A/B (bench/RESULTS.md, "V8 feedback for process.nextTick"): an http-proxy-3 pass-through,
// its upstream and autocannon in one process, after a few full garbage collections between bursts of
// load (what a gateway's old generation does every few seconds under load), with and without
// src/ops/tick-shape.ts. Each variant runs in a fresh process, alternately, because the state it
// measures is per process and sticky. Prints the process's CPU per request and V8's state of the tick
// literal's feedback.
// Run: node bench/diagnostics/tick-shape.mjs [pairs=3]
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);

if (process.argv[2] === 'child') {
  const keep = process.argv[3] === 'keep';
  const http = (await import('node:http')).default;
  const { createProxyServer } = await import('http-proxy-3');
  const autocannon = (await import('autocannon')).default;
  if (keep) {
    const { keepTickShape } = await import('../../src/ops/tick-shape.ts');
    await keepTickShape();
  }
  const up = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"data":{"ok":true},"meta":{"request_id":"x"}}');
  });
  await new Promise((r) => up.listen(0, '127.0.0.1', r));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, keepAliveMsecs: 30000 });
  const proxy = createProxyServer({ target: `http://127.0.0.1:${up.address().port}`, agent });
  proxy.on('error', () => {});
  const srv = http.createServer((req, res) => proxy.web(req, res));
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${srv.address().port}/x`;
  // Bursts of load, each followed by a full collection with the tick queue empty.
  for (let i = 0; i < 16; i++) {
    await autocannon({ url, connections: 50, duration: 0.25 });
    await new Promise((r) => setImmediate(r));
    globalThis.gc();
  }
  const c0 = process.cpuUsage();
  const r = await autocannon({ url, connections: 50, duration: 5 });
  const c1 = process.cpuUsage(c0);
  const micros = (c1.user + c1.system) / r.requests.total;
  process.stdout.write(`RESULT ${JSON.stringify({ keep, rps: Math.round(r.requests.average), micros: Math.round(micros * 10) / 10 })}\n`);
  // V8's view last: it prints through C's stdio, which reaches the file only at exit.
  new Function('f', '%DebugPrint(f)')(process.nextTick);
  process.exit(0);
}

const pairs = Number(process.argv[2] ?? 3);
const run = (variant) => {
  // Output to a file: V8 prints through C's stdio, which a pipe cut short (test/ops/tick-shape.test.ts).
  const dir = mkdtempSync(join(tmpdir(), 'tick-shape-'));
  const fd = openSync(join(dir, 'out'), 'w');
  try {
    execFileSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--import', 'tsx', self, 'child', variant], { stdio: ['ignore', fd, 'inherit'] });
  } finally {
    closeSync(fd);
  }
  const out = readFileSync(join(dir, 'out'), 'utf8');
  rmSync(dir, { recursive: true, force: true });
  const result = JSON.parse(out.match(/^RESULT (.*)$/m)[1]);
  const slots = [...out.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]).slice(0, 4);
  return { ...result, feedback: slots.join(' ') || '(not printed)' };
};
for (let i = 0; i < pairs; i++) {
  for (const variant of ['plain', 'keep']) {
    const r = run(variant);
    console.log(`${variant.padEnd(5)} ${String(r.rps).padStart(6)} req/s  ${r.micros.toFixed(1).padStart(6)} µs cpu/req (all in one process)  nextTick literal: ${r.feedback}`);
  }
}

// Diagnostic A/B (bench/RESULTS.md, "V8 feedback for process.nextTick"): an http-proxy-3 pass-through,
// its upstream and autocannon in one process, after a few full garbage collections between bursts of
// load (what a gateway's old generation does every few seconds under load), with and without
// src/ops/tick-shape.ts. Each variant runs in a fresh process, alternately, because the state it
// measures is per process and sticky. Prints the process's CPU per request and V8's state of the tick
// literal's feedback.
// Run: npx tsx bench/diagnostics/tick-shape.ts [pairs=3]
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createProxyServer } from 'http-proxy-3';
import autocannon from 'autocannon';
import { keepTickShape } from '../../src/ops/tick-shape.js';
import { PRINT_NEXT_TICK, runWithNatives, tickLiteralFeedback } from '../v8-feedback.js';

const listen = (srv: http.Server) =>
  new Promise<number>((r) => srv.listen(0, '127.0.0.1', () => r((srv.address() as AddressInfo).port)));

async function child(keep: boolean) {
  if (keep) await keepTickShape();
  const up = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"data":{"ok":true},"meta":{"request_id":"x"}}');
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, keepAliveMsecs: 30000 });
  const proxy = createProxyServer({ target: `http://127.0.0.1:${await listen(up)}`, agent });
  proxy.on('error', () => {});
  const url = `http://127.0.0.1:${await listen(http.createServer((req, res) => proxy.web(req, res)))}/x`;
  // Bursts of load, each followed by a full collection with the tick queue empty.
  for (let i = 0; i < 16; i++) {
    await autocannon({ url, connections: 50, duration: 0.25 });
    await new Promise((r) => setImmediate(r));
    (globalThis as unknown as { gc: () => void }).gc();
  }
  const c0 = process.cpuUsage();
  const r = await autocannon({ url, connections: 50, duration: 5 });
  const c1 = process.cpuUsage(c0);
  const micros = (c1.user + c1.system) / r.requests.total;
  process.stdout.write(
    `RESULT ${JSON.stringify({ rps: Math.round(r.requests.average), micros: Math.round(micros * 10) / 10 })}\n`,
  );
  // V8's view last: it prints through C's stdio, which reaches the file only at exit.
  new Function(PRINT_NEXT_TICK)();
  process.exit(0);
}

if (process.argv[2] === 'child') {
  await child(process.argv[3] === 'keep');
} else {
  const self = fileURLToPath(import.meta.url);
  const pairs = Number(process.argv[2] ?? 3);
  for (let i = 0; i < pairs; i++) {
    for (const variant of ['plain', 'keep']) {
      const out = runWithNatives([self, 'child', variant]);
      const r = JSON.parse(/^RESULT (.*)$/m.exec(out)![1]) as { rps: number; micros: number };
      const feedback = tickLiteralFeedback(out).join(' ') || '(not printed)';
      console.log(
        `${variant.padEnd(5)} ${String(r.rps).padStart(6)} req/s  ${r.micros.toFixed(1).padStart(6)} µs cpu/req (all in one process)  nextTick literal: ${feedback}`,
      );
    }
  }
}

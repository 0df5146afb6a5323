// Diagnostic (bench/RESULTS.md): redis-server CPU per gated request for the gate script in
// src/limits/redis/gate-lua.ts, on a private redis-server, optionally against the script of another commit
// in the same run (rounds alternate the two). 20,000 requests per variant and round, in batches of 16,
// each from one of GATE_IPS client addresses in turn (5,000 by default: each address about four times
// a window, as in the shared harness, so a quarter of the IP counters are new and get their PEXPIRE).
// Run: node bench/diagnostics/gate-redis-cpu.mjs                 (needs redis-server on PATH)
//      GATE_BASE=<commit> GATE_ROUNDS=6 node bench/diagnostics/gate-redis-cpu.mjs
// GATE_IPS (5,000) sets the addresses in turn (16000000: every counter new, as in the shared harness,
// whose addresses rotate through a /16 faster than a window), GATE_BATCH (16) the requests per script
// (the harness's batches hold about 9), GATE_ALT a file holding a hand-written script to compare.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

const FILE = 'src/limits/redis/gate-lua.ts';
function scriptOf(src) {
  const at = src.indexOf('const GATE_LUA = `') + 'const GATE_LUA = `'.length;
  return src.slice(at, src.indexOf('`;', at)).replaceAll('\\\\', '\\');
}
const variants = { current: scriptOf(readFileSync(new URL(`../../${FILE}`, import.meta.url), 'utf8')) };
if (process.env.GATE_BASE)
  variants[process.env.GATE_BASE] = scriptOf(
    execFileSync('git', ['show', `${process.env.GATE_BASE}:${FILE}`], { encoding: 'utf8' }),
  );
// Scripts before the numeric operation field took 's2' for a spend of two counters.
const spendOfTwo = (lua) => (lua.includes('string.match(op') ? 's2' : '2');
if (process.env.GATE_ALT) variants.alt = readFileSync(process.env.GATE_ALT, 'utf8');
const IPS = Number(process.env.GATE_IPS ?? 5000);
const B = Number(process.env.GATE_BATCH ?? 16);
const ROUNDS = Number(process.env.GATE_ROUNDS ?? 3);

const port = 20000 + Math.floor(Math.random() * 20000);
const server = spawn(
  'redis-server',
  ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
  { stdio: 'ignore' },
);
const r = new Redis(port, { retryStrategy: (n) => (n > 50 ? null : 100), maxRetriesPerRequest: null });
try {
  await r.ping();
  const cpu = async () =>
    [...(await r.info('cpu')).matchAll(/used_cpu_(?:sys|user):([\d.]+)/g)].reduce((a, m) => a + Number(m[1]) * 1e6, 0);
  const names = Object.keys(variants);
  names.forEach((name, n) => r.defineCommand(`gate${n}`, { lua: variants[name], numberOfKeys: 0 }));
  const results = Object.fromEntries(names.map((name) => [name, []]));
  let ipn = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? names : [...names].reverse();
    for (const name of order) {
      const op = spendOfTwo(variants[name]);
      const N = 20_000;
      const now = Date.now();
      const start = now - (now % 60_000);
      const c0 = await cpu();
      for (let i = 0; i < N; i += B) {
        let fields = '';
        for (let j = 0; j < B; j++) {
          const a = ipn++ % IPS;
          const ip = `10.${(a >> 16) & 255}.${(a >> 8) & 255}.${a & 255}`;
          fields += `0\n${op}\nkg:af:{${ip}}:cooldown\nkg:av:{7}\nkg:rl:{k:1:read}:${start}\nkg:rl:{ip:${ip}}:${start}\n`;
        }
        // Scripts before the latest cooldown end (ARGV[5]) ignore the extra argument.
        const reply = await r[`gate${names.indexOf(name)}`](
          now,
          65_000,
          fields,
          86_400_000,
          'kg:af:{cooldowns}:latest',
        );
        if (reply.split('\n').length !== B || !reply.startsWith('s ')) throw new Error(`unexpected reply: ${reply}`);
      }
      const us = ((await cpu()) - c0) / N;
      results[name].push(us);
      console.log(`round ${round}  ${name.padEnd(12)} ${us.toFixed(2)} µs of redis-server CPU per request`);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const name of names) console.log(`median  ${name.padEnd(12)} ${median(results[name]).toFixed(2)} µs`);
  if (names.length === 2) {
    const ratios = results.current.map((c, n) => c / results[names[1]][n]);
    console.log(
      `current / ${names[1]} per round: ${ratios.map((x) => x.toFixed(2)).join(' ')} (median ${median(ratios).toFixed(2)})`,
    );
  }
} finally {
  r.disconnect();
  server.kill('SIGTERM');
}

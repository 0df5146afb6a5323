// Diagnostic (bench/RESULTS.md): redis-server CPU per gated request for the shipped gate script (its
// batch packed into one argument, one string reply), on a private redis-server. 20,000 requests per
// variant in batches of 16, each with a new client IP (so every IP counter is new and gets its PEXPIRE).
// Run: node bench/diagnostics/gate-redis-cpu.mjs   (needs redis-server on PATH)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

const src = readFileSync(new URL('../../src/limits/redis-gate.ts', import.meta.url), 'utf8');
const at = src.indexOf('const GATE_LUA = `') + 'const GATE_LUA = `'.length;
const GATE = src.slice(at, src.indexOf('`;', at));
const variants = { shipped: GATE.replaceAll('\\\\n', '\\n') };

const port = 20000 + Math.floor(Math.random() * 20000);
const server = spawn(
  'redis-server',
  ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
  { stdio: 'ignore' },
);
const r = new Redis(port, { retryStrategy: (n) => (n > 50 ? null : 100) });
try {
  await r.ping();
  const cpu = async () =>
    [...(await r.info('cpu')).matchAll(/used_cpu_(?:sys|user):([\d.]+)/g)].reduce((a, m) => a + Number(m[1]) * 1e6, 0);
  let ipn = 0;
  for (const round of [1, 2]) {
    for (const [name, lua] of Object.entries(variants)) {
      const cmd = `gate${round}${name.replace(/\W/g, '')}`;
      r.defineCommand(cmd, { lua, numberOfKeys: 0 });
      const N = 20_000;
      const B = 16;
      const now = Date.now();
      const start = now - (now % 60_000);
      const c0 = await cpu();
      for (let i = 0; i < N; i += B) {
        let fields = '';
        for (let j = 0; j < B; j++) {
          const ip = `10.${(ipn >> 16) & 255}.${(ipn >> 8) & 255}.${ipn++ & 255}`;
          fields += `0\ns2\nkg:af:{${ip}}:cooldown\nkg:av:{7}\nkg:rl:{k:1:read}:${start}\nkg:rl:{ip:${ip}}:${start}\n`;
        }
        const reply = await r[cmd](now, 65_000, fields);
        if (reply.split('\n').length !== B) throw new Error(`unexpected reply: ${reply}`);
      }
      console.log(
        `round ${round}  ${name.padEnd(15)} ${(((await cpu()) - c0) / N).toFixed(1)} µs of redis-server CPU per request`,
      );
    }
  }
} finally {
  r.disconnect();
  server.kill('SIGTERM');
}

// The usage history's CPU per request through the gateway, on against off in one run (issue 39): two
// gateways of this tree in ONE process (./cpu-child.ts; the method of bench/diagnostics/inproc-ab.ts:
// the same module instances and heap, neighbouring windows of the same machine moment), loaded in turn
// in short windows, the process's CPU µs per request over each window read over IPC, and on/off window
// pair by window pair. Requests rotate over USC_KEYS keys (a row per key and minute in the writer's
// map, as in production) and client addresses, so no limit refuses. The history flushes every
// USAGE_FLUSH_MS (10 s, the default) into PostgreSQL; its writes are in the "on" windows' CPU.
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/usage/cpu.ts
// Settings: USC_ROUNDS (12), USC_WINDOW (2 s), USC_CONNECTIONS (50), USC_KEYS (200), USC_FIRST (off: the
// gateway started first in the process; `on` for the other order). The order of the
// two alternates each round.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runLoad, nextIp } from '../load.js';
import { HOP_PATH as PATH, hopSeed } from '../hop.js';
import { askChild, childReady, freshSchema, runThenStop, startRedisAndUpstream } from '../diagnostics/stack.js';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const env = process.env;
const rounds = Number(env.USC_ROUNDS ?? 12);
const window = Number(env.USC_WINDOW ?? 2);
const connections = Number(env.USC_CONNECTIONS ?? 50);
const keyCount = Number(env.USC_KEYS ?? 200);
const keys = Array.from({ length: keyCount }, () => 'svc_ws_' + randomBytes(30).toString('hex').slice(0, 40));
const procs: ChildProcess[] = [];
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const start = (name: string, cmd: string, args: string[], e: Record<string, string>) => {
  const out = openSync(join(tmpdir(), `usage-cpu-${name}.log`), 'w');
  const cp = spawn(cmd, args, {
    env: { PATH: env.PATH ?? '', HOME: env.HOME ?? tmpdir(), ...e },
    stdio: ['ignore', out, out],
  });
  procs.push(cp);
  return cp;
};

/** hopSeed's organization and workspace, with `keys` keys of its key's scopes. */
function seedOf(): unknown {
  const base = hopSeed(keys[0]);
  const [k] = base.apiKeys;
  return { ...base, apiKeys: keys.map((secret, i) => ({ ...k, id: 1000 + i, secret, name: `k${i}` })) };
}

async function main() {
  if (!env.DATABASE_URL) throw new Error('set DATABASE_URL (the history is written to PostgreSQL)');
  const { redisPort, upstreamPort } = await startRedisAndUpstream(start);
  const { url: dbUrl, drop } = await freshSchema(env.DATABASE_URL, 'usagecpu');
  const seed = join(mkdtempSync(join(tmpdir(), 'usage-cpu-')), 'seed.json');
  writeFileSync(seed, JSON.stringify(seedOf()));
  const out = openSync(join(tmpdir(), 'usage-cpu.log'), 'w');
  const child = fork(join(ROOT, 'bench', 'usage', 'cpu-child.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: {
      PATH: env.PATH ?? '',
      HOME: env.HOME ?? tmpdir(),
      NODE_ENV: 'production',
      SEED_FILE: seed,
      HOST: '127.0.0.1',
      UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      DATABASE_URL: dbUrl.toString(),
      GATEWAY_SECRET: randomBytes(32).toString('hex'),
      INTERNAL_TOKEN: randomBytes(24).toString('hex'),
      TRUST_PROXY: '127.0.0.1,::1',
      PLANS_FILE: join(ROOT, 'bench', 'plans.json'),
      ACCESS_LOG: 'off',
      LOG_LEVEL: 'warn',
      USC_FIRST: env.USC_FIRST ?? 'off',
    },
    stdio: ['ignore', out, out, 'ipc'],
  });
  procs.push(child);
  const ask = <T>(msg: string, key: string) => askChild(child, msg, key) as Promise<T>;
  const urls = await childReady(child, '/tmp/usage-cpu.log');
  let k = 0;
  const headers = () => ({ authorization: `Bearer ${keys[k++ % keys.length]}`, 'x-forwarded-for': nextIp() });
  let answeredOn = 0;
  const load = async (url: string, duration: number) => {
    const r = await runLoad([{ url, path: PATH, connections, duration, headers }]);
    if (url === urls.on) answeredOn += Object.values(r.statuses).reduce((a, b) => a + b, 0);
    return r;
  };
  const names = ['off', 'on'];
  for (const n of names) {
    const r = await load(urls[n], 3);
    console.log(`warm-up ${n}: ${Math.round(r.rps)} req/s ${JSON.stringify(r.statuses)}`);
  }
  const cpu: Record<string, number[]> = { off: [], on: [] };
  for (let round = 0; round < rounds; round++) {
    for (const n of round % 2 ? [...names].reverse() : names) {
      await load(urls[n], 0.5);
      const c0 = await ask<number>('cpu', 'cpu');
      const r = await load(urls[n], window);
      const us = ((await ask<number>('cpu', 'cpu')) - c0) / r.requests;
      cpu[n].push(us);
      console.log(
        `round ${round + 1} ${n.padEnd(4)} ${Math.round(r.rps)} req/s  CPU ${us.toFixed(1)} µs/req  non-2xx ${r.non2xx}`,
      );
    }
  }
  const ratios = cpu.on.map((v, i) => v / cpu.off[i]);
  console.log(
    `off CPU median ${median(cpu.off).toFixed(1)} µs/req; on ${median(cpu.on).toFixed(1)} µs/req, on/off ${median(ratios).toFixed(3)} [${ratios.map((x) => x.toFixed(2)).join(', ')}]`,
  );
  child.send('exit');
  await new Promise((r) => child.once('exit', r));
  // The history's sum against the answers: the writer flushed at its stop.
  const c = new pg.Client({ connectionString: dbUrl.toString() });
  await c.connect();
  const { rows } = await c
    .query('SELECT coalesce(sum(count), 0)::bigint AS n FROM usage_minute')
    .finally(() => c.end());
  // At least what autocannon counted: it stops counting at each window's end with requests in flight,
  // which the gateway still answers and counts (test/usage/two-gateways.test.ts holds the exact sums).
  console.log(`history holds ${rows[0].n} requests; autocannon counted ${answeredOn} answers of the "on" gateway`);
  await drop();
}

runThenStop(main, procs);

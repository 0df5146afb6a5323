// Diagnostic A/B of gateway builds inside ONE process (./inproc-ab-child.mjs): a gateway per compiled
// build, all in one node process, loaded in turn in short windows; CPU µs per request of that process
// over each window (process.cpuUsage, read over IPC), and each build's ratio to the first, window pair
// by window pair. Between two processes of the very same build CPU per request differs by 10 to 15 %
// for the life of each process (bench/README.md), and a shared machine moves every figure from one
// minute to the next: here the builds share the process (the same undici, ioredis, pino and node:http
// instances, one heap) and neighbouring windows share the machine's moment. What differs is keygate's
// own code. Absolute figures are not those of a gateway alone (shared call sites see several builds).
// It does not remove the machine's own noise: on 2026-11-26 at 14:00 UTC, with another benchmark
// running on the same 2 cores, one build against itself read 0.72 to 1.68 from one window to the next
// (12 rounds of 2 s), no steadier than builds-ab.ts's separate processes in that hour.
//
// Build each variant first:
//   npx tsc -p tsconfig.build.json --outDir bench/.build/<name> && cp -r src/db/migrations bench/.build/<name>/db/
// Run:
//   DATABASE_URL=postgres://... IAB_BUILDS="base=bench/.build/base;new=bench/.build/new" npx tsx bench/diagnostics/inproc-ab.ts
// Settings: IAB_ROUNDS (12), IAB_WINDOW (2 s), IAB_CONNECTIONS (50), IAB_ENV (extra settings for every
// gateway, e.g. `ACCESS_LOG=off,LOG_LEVEL=warn`; the access log is on by default, as shipped, into
// /tmp/inproc-ab.log with the process's other output). The order of the builds alternates each round.
import { fork } from 'node:child_process';
import { mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runLoad, nextIp } from '../load.js';
import { HOP_PATH as PATH, hopSeed } from '../hop.js';
import { askChild, childReady, freshSchema, runThenStop, startRedisAndUpstream } from './stack.js';
import { spawn, type ChildProcess } from 'node:child_process';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const env = process.env;
const rounds = Number(env.IAB_ROUNDS ?? 12);
const window = Number(env.IAB_WINDOW ?? 2);
const connections = Number(env.IAB_CONNECTIONS ?? 50);
const KEY = 'svc_ws_' + randomBytes(30).toString('hex').slice(0, 40);
const procs: ChildProcess[] = [];
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const start = (name: string, cmd: string, args: string[], e: Record<string, string>) => {
  const out = openSync(join(tmpdir(), `inproc-ab-${name}.log`), 'w');
  const cp = spawn(cmd, args, {
    env: { PATH: env.PATH ?? '', HOME: env.HOME ?? tmpdir(), ...e },
    stdio: ['ignore', out, out],
  });
  procs.push(cp);
  return cp;
};

async function main() {
  if (!env.DATABASE_URL) throw new Error('set DATABASE_URL (keygate reads its key from PostgreSQL)');
  const builds = (env.IAB_BUILDS ?? '').split(';').map((spec) => {
    const [name, dir] = spec.split('=');
    return { name, dir: resolve(ROOT, dir) };
  });
  if (builds.length < 2) throw new Error('IAB_BUILDS: at least two name=dir');
  const { redisPort, upstreamPort } = await startRedisAndUpstream(start);
  const { url: dbUrl, drop } = await freshSchema(env.DATABASE_URL, 'iab');
  const work = mkdtempSync(join(tmpdir(), 'inproc-ab-'));
  const seed = join(work, 'seed.json');
  writeFileSync(seed, JSON.stringify(hopSeed(KEY)));
  const extra = Object.fromEntries(
    (env.IAB_ENV ?? '')
      .split(',')
      .filter(Boolean)
      .map((kv) => kv.split('=')),
  );
  const out = openSync(join(tmpdir(), 'inproc-ab.log'), 'w');
  const child = fork(join(ROOT, 'bench', 'diagnostics', 'inproc-ab-child.mjs'), [], {
    env: {
      PATH: env.PATH ?? '',
      HOME: env.HOME ?? tmpdir(),
      NODE_ENV: 'production',
      BUILDS: JSON.stringify(builds),
      SEED_FILE: seed,
      HOST: '127.0.0.1',
      UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      DATABASE_URL: dbUrl.toString(),
      GATEWAY_SECRET: randomBytes(32).toString('hex'),
      INTERNAL_TOKEN: randomBytes(24).toString('hex'),
      TRUST_PROXY: '127.0.0.1,::1',
      PLANS_FILE: join(ROOT, 'bench', 'plans.json'),
      ACCESS_LOG: 'on',
      ...extra,
    },
    stdio: ['ignore', out, out, 'ipc'],
  });
  procs.push(child);
  const ask = <T>(msg: string, key: string) => askChild(child, msg, key) as Promise<T>;
  const urls = await childReady(child, '/tmp/inproc-ab.log');
  const headers = () => ({ authorization: `Bearer ${KEY}`, 'x-forwarded-for': nextIp() });
  const load = (url: string, duration: number) => runLoad([{ url, path: PATH, connections, duration, headers }]);
  for (const b of builds) {
    const r = await load(urls[b.name], 3);
    console.log(`warm-up ${b.name}: ${Math.round(r.rps)} req/s ${JSON.stringify(r.statuses)}`);
  }
  const cpu: Record<string, number[]> = {};
  for (let round = 0; round < rounds; round++) {
    for (const b of round % 2 ? [...builds].reverse() : builds) {
      await load(urls[b.name], 0.5);
      const c0 = await ask<number>('cpu', 'cpu');
      const r = await load(urls[b.name], window);
      const us = ((await ask<number>('cpu', 'cpu')) - c0) / r.requests;
      (cpu[b.name] ??= []).push(us);
      console.log(
        `round ${round + 1} ${b.name.padEnd(10)} ${Math.round(r.rps)} req/s  CPU ${us.toFixed(1)} µs/req  non-2xx ${r.non2xx}`,
      );
    }
  }
  const base = cpu[builds[0].name];
  for (const b of builds) {
    const ratios = cpu[b.name].map((v, i) => v / base[i]);
    console.log(
      `${b.name.padEnd(10)} CPU median ${median(cpu[b.name]).toFixed(1)} µs/req, x ${builds[0].name} ${median(ratios).toFixed(3)} [${ratios.map((x) => x.toFixed(2)).join(', ')}]`,
    );
  }
  child.send('exit');
  await drop();
}

runThenStop(main, procs);

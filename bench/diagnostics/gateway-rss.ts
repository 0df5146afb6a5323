// Diagnostic: the memory of a compiled keygate gateway alone (`node <build>/cli.js gateway`, the production
// entry the shared peers harness starts), read from outside in /proc/<pid>/status (VmRSS, VmHWM, RssAnon,
// RssFile) at four stages with the same command each time: idle 2 s after /readyz; after a warm-up of
// one key; after the many-keys scenario (every key once, then a window rotating through all of them, as
// the bench's scenario 4 does); and 5 s after that, idle.
//
// Build the tree first (the working tree as it is when compiled):
//   npx tsc -p tsconfig.build.json --outDir bench/.build/<name> && cp -r src/db/migrations bench/.build/<name>/db/
// Run (from the checkout's root):
//   RSS_ENTRY=bench/.build/<name>/cli.js DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/diagnostics/gateway-rss.ts
// Settings:
//   RSS_ENTRY       the compiled cli.js (bench/.build/cur/cli.js)
//   RSS_KEYS        distinct keys of the many-keys stage (10000), seeded by `cli.js seed` in a process of its own
//   RSS_DURATION    seconds of the many-keys window after every key was used once (10)
//   RSS_STARTS      gateways started one after the other with the same command, one reading each (1)
//   RSS_IDLE_ONLY=1 read the idle stage only (no load): what the start loads
//   RSS_SEED_IN_GATEWAY=1  also give the gateway a one-key SEED_FILE, as the peers harness does (its start
//                   then parses and applies a seed, which loads the backend domains' seed code)
//   RSS_HOOK=1      preload bench/diagnostics/memory-hook.mjs: heapUsed, heapTotal, external and arrayBuffers
//                   at each stage too, and the new space's resident size (it changes the process by one
//                   listener, node:fs and node:v8); with RSS_FLAGS=--expose-gc also `live`, heapUsed right
//                   after a full collection the hook runs (which then changes the stages after it)
//   RSS_SNAPSHOT=1  start with --heapsnapshot-signal=SIGUSR2 and write a heap snapshot at each stage into
//                   RSS_OUT (compare with bench/diagnostics/heap-diff.mjs); the snapshots make RSS readings
//                   after the first meaningless
//   RSS_FLAGS       more node flags for the gateway, space-separated
//   RSS_ENV         more settings for the gateway, "A=b,C=d"
//   RSS_OUT         folder for the logs and snapshots (a new one under the temporary directory)
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runLoad, nextIp } from '../load.js';
import { freePort } from '../procs.js';
import { freshSchema, startRedisAndUpstream } from './stack.js';
import { benchSeed, manyKeys, ONE_KEY, WS } from '../seed.js';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const env = process.env;
const entry = resolve(ROOT, env.RSS_ENTRY ?? 'bench/.build/cur/cli.js');
const keyCount = Number(env.RSS_KEYS ?? 10_000);
const duration = Number(env.RSS_DURATION ?? 10);
const starts = Number(env.RSS_STARTS ?? 1);
const hook = env.RSS_HOOK === '1';
const snapshot = env.RSS_SNAPSHOT === '1';
const gcExposed = (env.RSS_FLAGS ?? '').includes('--expose-gc');
const databaseUrl = env.DATABASE_URL;
const out = env.RSS_OUT ?? mkdtempSync(join(tmpdir(), 'gateway-rss-'));
const PATH = `/v2/workspaces/${WS}/tags`;
const SECRET = randomBytes(32).toString('hex');
const procs: ChildProcess[] = [];
let atEnd = async () => {};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const start = (name: string, cmd: string, args: string[], e: Record<string, string>) => {
  const log = openSync(join(out, `${name}.log`), 'a');
  const cp = spawn(cmd, args, {
    cwd: ROOT,
    env: { PATH: env.PATH ?? '', HOME: env.HOME ?? tmpdir(), NODE_ENV: 'production', ...e },
    stdio: ['ignore', log, log],
  });
  procs.push(cp);
  return cp;
};

/** VmRSS, VmHWM, RssAnon, RssFile of a process, in MB, from /proc/<pid>/status. */
function status(pid: number) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN) / 1024;
  return { rss: mb('VmRSS'), peak: mb('VmHWM'), anon: mb('RssAnon'), file: mb('RssFile') };
}

const MB = (b: number) => b / 2 ** 20;
/** User + system CPU time of a process so far, in µs (/proc/<pid>/stat, clock ticks of 10 ms). */
const cpuMicros = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
};
const f1 = (n: number) => n.toFixed(1);

interface Reading {
  stage: string;
  rss: number;
  peak: number;
  anon: number;
  file: number;
  heapUsed?: number;
  live?: number;
  newSpace?: number;
  heapTotal?: number;
  external?: number;
  arrayBuffers?: number;
}

async function readHook(pid: number, file: string, lines: number) {
  process.kill(pid, 'SIGWINCH');
  for (let i = 0; i < 100; i++) {
    await sleep(50);
    const all = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
    if (all.length > lines)
      return JSON.parse(all[lines]) as {
        before: NodeJS.MemoryUsage;
        after: NodeJS.MemoryUsage;
        spaces: Record<string, [number, number, number]>;
      };
  }
  throw new Error('the memory hook did not answer');
}

async function snap(pid: number, dir: string, n: number) {
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 600; i++) {
    await sleep(100);
    const files = readdirSync(dir).filter((x) => x.endsWith('.heapsnapshot'));
    // Written when the next stage may begin: the file exists and its size stopped changing.
    if (files.length >= n) {
      const last = join(dir, files.sort().at(-1)!);
      const a = readFileSync(last).length;
      await sleep(500);
      if (readFileSync(last).length === a && a > 0) return last;
    }
  }
  throw new Error('no heap snapshot');
}

async function main() {
  if (!databaseUrl) throw new Error('set DATABASE_URL (keygate reads its keys from PostgreSQL)');
  if (!existsSync(entry)) throw new Error(`${entry} is absent: build it first (see the head of this file)`);
  const { redisPort, upstreamPort } = await startRedisAndUpstream(start);
  const { url: dbUrl, drop } = await freshSchema(databaseUrl, 'rss');
  // Dropped at the end whatever happened (a failed or interrupted run leaves no schema behind).
  atEnd = drop;
  const seedFile = join(out, 'seed.json');
  writeFileSync(seedFile, JSON.stringify(benchSeed(keyCount)));
  const oneSeed = benchSeed(0);
  const oneSeedFile = join(out, 'one-key-seed.json');
  writeFileSync(oneSeedFile, JSON.stringify({ ...oneSeed, tags: [], accounts: [] }));
  const common = {
    DATABASE_URL: dbUrl.toString(),
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    GATEWAY_SECRET: SECRET,
    INTERNAL_TOKEN: randomBytes(24).toString('hex'),
    PLANS_FILE: join(ROOT, 'bench', 'plans.json'),
  };
  // The keys are written by a process of their own: the gateway's memory is the gateway's.
  const seeding = start('seed', process.execPath, [entry, 'seed'], { ...common, SEED_FILE: seedFile });
  const code = await new Promise((r) => seeding.once('exit', r));
  if (code !== 0) throw new Error(`seed exited with ${code} (log: ${join(out, 'seed.log')})`);

  const extra = Object.fromEntries(
    (env.RSS_ENV ?? '')
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const flags = [
    ...(hook ? ['--import', join(ROOT, 'bench', 'diagnostics', 'memory-hook.mjs')] : []),
    ...(env.RSS_FLAGS ?? '').split(' ').filter(Boolean),
  ];
  console.log(
    `gateway: node ${[...flags, entry.replace(ROOT + '/', ''), 'gateway'].join(' ')}; ${keyCount} keys; ${duration} s window; out ${out}`,
  );
  const all: Reading[][] = [];
  for (let s = 0; s < starts; s++) {
    const [p, adminPort, backendPort] = [await freePort(), await freePort(), await freePort()];
    const hookFile = join(out, `hook-${s}.jsonl`);
    const snapDir = mkdtempSync(join(out, `snap-${s}-`));
    const gw = start(
      `gateway-${s}`,
      process.execPath,
      [
        ...flags,
        ...(snapshot ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapDir}`] : []),
        entry,
        'gateway',
      ],
      {
        ...common,
        HOST: '127.0.0.1',
        PORT: String(p),
        ADMIN_PORT: String(adminPort),
        BACKEND_PORT: String(backendPort),
        UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
        TRUST_PROXY: '127.0.0.1,::1',
        LOG_LEVEL: 'info',
        ...(env.RSS_SEED_IN_GATEWAY === '1' ? { SEED_FILE: oneSeedFile } : {}),
        ...(hook ? { MEMORY_HOOK_FILE: hookFile } : {}),
        ...extra,
      },
    );
    const t0 = Date.now();
    for (;;) {
      if (gw.exitCode !== null) throw new Error(`the gateway exited (log: ${join(out, `gateway-${s}.log`)})`);
      const ok = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (Date.now() - t0 > 60_000) throw new Error('the gateway was not ready within 60 s');
      await sleep(100);
    }
    const readings: Reading[] = [];
    let hookLines = 0;
    let snaps = 0;
    const read = async (stage: string) => {
      const r: Reading = { stage, ...status(gw.pid!) };
      if (hook) {
        const { before: m, after, spaces } = await readHook(gw.pid!, hookFile, hookLines++);
        Object.assign(r, {
          heapUsed: MB(m.heapUsed),
          live: gcExposed ? MB(after.heapUsed) : undefined,
          newSpace: MB(spaces.new_space[2]),
          heapTotal: MB(m.heapTotal),
          external: MB(m.external),
          arrayBuffers: MB(m.arrayBuffers),
        });
      }
      if (snapshot) console.log(`  snapshot ${stage}: ${await snap(gw.pid!, snapDir, ++snaps)}`);
      readings.push(r);
    };
    await sleep(2000);
    await read('idle after start');
    if (env.RSS_IDLE_ONLY === '1') {
      console.log(`start ${s + 1}: idle RSS ${f1(readings[0].rss)} MB`);
      all.push(readings);
      gw.kill('SIGTERM');
      await new Promise((r) => gw.once('exit', r));
      continue;
    }

    const url = `http://127.0.0.1:${p}`;
    const c0 = cpuMicros(gw.pid!);
    const one = await runLoad([
      {
        url,
        path: PATH,
        connections: 50,
        duration: 5,
        headers: () => ({ authorization: `Bearer ${ONE_KEY}`, 'x-forwarded-for': nextIp() }),
      },
    ]);
    const c0b = cpuMicros(gw.pid!);
    await read('after one key (5 s)');

    const bearers = manyKeys(keyCount).map((k) => `Bearer ${k}`);
    let i = 0;
    const many = () => ({ authorization: bearers[i++ % bearers.length], 'x-forwarded-for': nextIp() });
    const first = await runLoad([{ url, path: PATH, connections: 50, amount: keyCount, headers: many }]);
    const c1 = cpuMicros(gw.pid!);
    const window = await runLoad([{ url, path: PATH, connections: 50, duration, headers: many }]);
    const c2 = cpuMicros(gw.pid!);
    await read(`after many keys (${keyCount} once + ${duration} s)`);
    await sleep(5000);
    await read('5 s later, idle');
    const statuses = JSON.stringify({ one: one.statuses, first: first.statuses, window: window.statuses });
    console.log(
      `start ${s + 1}: one key ${Math.round(one.rps)} req/s, many keys ${Math.round(window.rps)} req/s; gateway CPU µs/req: one key ${f1((c0b - c0) / one.requests)}, many-keys window ${f1((c2 - c1) / window.requests)}; statuses ${statuses}`,
    );
    for (const r of readings)
      console.log(
        `  ${r.stage.padEnd(36)} RSS ${f1(r.rss).padStart(6)}  peak ${f1(r.peak).padStart(6)}  anon ${f1(r.anon).padStart(6)}  file ${f1(r.file).padStart(5)}` +
          (hook
            ? `  heapUsed ${f1(r.heapUsed!).padStart(5)}  heapTotal ${f1(r.heapTotal!).padStart(5)}  external ${f1(r.external!).padStart(5)}  arrayBuffers ${f1(r.arrayBuffers!).padStart(5)}  new space ${f1(r.newSpace!).padStart(5)}${r.live === undefined ? '' : `  live ${f1(r.live).padStart(5)}`}`
            : '') +
          ' MB',
      );
    all.push(readings);
    gw.kill('SIGTERM');
    await new Promise((r) => gw.once('exit', r));
  }
  if (starts > 1) {
    console.log('RSS per stage over the starts (MB):');
    for (let k = 0; k < all[0].length; k++)
      console.log(`  ${all[0][k].stage.padEnd(36)} ${all.map((r) => f1(r[k].rss)).join(' / ')}`);
  }
  writeFileSync(join(out, 'readings.json'), JSON.stringify(all, null, 1));
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGTERM');
    await atEnd().catch((err) => console.error(`dropping the schema: ${(err as Error).message}`));
  });
process.once('SIGINT', () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGTERM');
  void atEnd().finally(() => process.exit(130));
});

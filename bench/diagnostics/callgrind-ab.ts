// Instructions per request of compiled gateway builds, counted by valgrind's callgrind: the steadiest
// figure on a shared machine, where CPU time per request moves with whatever else runs (builds-ab.ts
// reads 0.8 to 1.7 between two processes of one build on a busy 2-core machine). Each build runs under
// `valgrind --tool=callgrind --instr-atstart=no` in front of the trivial upstream, one private
// redis-server and one PostgreSQL schema, the builds-ab load (one key, X-Forwarded-For rotating over
// 10.0.0.0/16, GET /v2/workspaces/100/tags). After a warm-up long enough for V8 to optimize the hot
// path, each round switches counting on for one window of the load and dumps the counts: user-space
// instructions (Ir) of every thread of the process, divided by the responses of that window. What a
// system call does in the kernel is not counted (a batch that saves a write saves more than this shows).
//
// Build each variant first, as for builds-ab.ts:
//   npx tsc -p tsconfig.build.json --outDir bench/.build/<name> && cp -r src/db/migrations bench/.build/<name>/db/
// Run:
//   CG_TARGETS="base=bench/.build/base/cli.js;new=bench/.build/new/cli.js" \
//     DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/diagnostics/callgrind-ab.ts
// Settings: CG_ROUNDS (3), CG_WARMUP (40 s of load before the first round), CG_DURATION (8 s a
// window), CG_CONNECTIONS (50, as the comparison kit). `@%NAME=value` after an entry sets an environment variable for that
// target (e.g. `new=...cli.js@%ACCESS_LOG=off`); keygate runs with ACCESS_LOG=on, as shipped.
// Each process's output goes to /tmp/callgrind-ab-<name>.log, its counts to /tmp/callgrind-ab-<name>.<n>.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runLoad, nextIp } from '../load.js';
import { HOP_PATH as PATH, hopSeed } from '../hop.js';
import { freePort, waitForPort } from '../procs.js';
import { freshSchema, runThenStop, startRedisAndUpstream, stopBeforeDrop } from './stack.js';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const env = process.env;
const rounds = Number(env.CG_ROUNDS ?? 3);
const warmup = Number(env.CG_WARMUP ?? 40);
const duration = Number(env.CG_DURATION ?? 8);
const connections = Number(env.CG_CONNECTIONS ?? 50);
const KEY = 'svc_ws_' + randomBytes(30).toString('hex').slice(0, 40);
const SECRET = randomBytes(32).toString('hex');
const procs: ChildProcess[] = [];
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const start = (name: string, cmd: string, args: string[], e: Record<string, string>) => {
  const out = openSync(join(tmpdir(), `callgrind-ab-${name}.log`), 'w');
  const cp = spawn(cmd, args, {
    env: { ...bareEnv, NODE_ENV: 'production', ...e },
    stdio: ['ignore', out, out],
  });
  procs.push(cp);
  return cp;
};

// The same environment as the processes it talks to: vgdb names its shared files after USER and HOST,
// which the targets have not (USER) or have as their listening address (HOST).
const bareEnv = { PATH: env.PATH ?? '', HOME: env.HOME ?? tmpdir() };
const control = (...args: string[]) => {
  const r = spawnSync('callgrind_control', args, { encoding: 'utf8', env: { ...bareEnv, HOST: '127.0.0.1' } });
  if (r.status !== 0 || !/OK/.test(r.stdout))
    throw new Error(`callgrind_control ${args.join(' ')}: ${r.stderr || r.stdout}`);
};

/** The instructions of the dumps `prefix` wrote since `seen` (every thread's file), in their `totals:` lines. */
function dumpedIr(prefix: string, seen: Set<string>): number {
  const dir = tmpdir();
  const base = prefix.slice(dir.length + 1);
  let ir = 0;
  for (const f of readdirSync(dir)) {
    if (!f.startsWith(base) || seen.has(f)) continue;
    seen.add(f);
    const m = /^(?:totals|summary): (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
    if (m) ir += Number(m[1]);
  }
  return ir;
}

interface Target {
  name: string;
  pid: number;
  url: string;
  prefix: string;
  seen: Set<string>;
}

async function main() {
  const databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) throw new Error('set DATABASE_URL (keygate reads its key from PostgreSQL)');
  const { redisPort, upstreamPort } = await startRedisAndUpstream(start);
  const { url: dbUrl, drop } = await freshSchema(databaseUrl, 'cg');
  const work = mkdtempSync(join(tmpdir(), 'callgrind-ab-'));
  const seed = join(work, 'seed.json');
  writeFileSync(seed, JSON.stringify(hopSeed(KEY)));
  const targets: Target[] = [];
  for (const spec of (env.CG_TARGETS ?? '').split(';').filter(Boolean)) {
    const eq = spec.indexOf('=');
    const [name, [entry, ...extra]] = [spec.slice(0, eq), spec.slice(eq + 1).split('@')];
    const vars = Object.fromEntries(extra.filter((x) => x.startsWith('%')).map((x) => x.slice(1).split('=')));
    const port = await freePort();
    const prefix = join(tmpdir(), `callgrind-ab-${name}.out`);
    for (const f of readdirSync(tmpdir())) if (f.startsWith(`callgrind-ab-${name}.out`)) rmSync(join(tmpdir(), f));
    const cp = start(
      name,
      'valgrind',
      [
        '--tool=callgrind',
        '--instr-atstart=no',
        // V8 writes and rewrites its machine code: without this valgrind would run stale translations.
        '--smc-check=all-non-file',
        `--callgrind-out-file=${prefix}`,
        process.execPath,
        resolve(ROOT, entry),
        'gateway',
      ],
      {
        HOST: '127.0.0.1',
        PORT: String(port),
        ADMIN_PORT: String(await freePort()),
        BACKEND_PORT: String(await freePort()),
        UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        DATABASE_URL: dbUrl.toString(),
        GATEWAY_SECRET: SECRET,
        INTERNAL_TOKEN: randomBytes(24).toString('hex'),
        TRUST_PROXY: '127.0.0.1,::1',
        PLANS_FILE: join(ROOT, 'bench', 'plans.json'),
        SEED_FILE: seed,
        ACCESS_LOG: 'on',
        ...vars,
      },
    );
    await waitForPort(port, 600_000).catch((err) => {
      throw new Error(`${name} did not start (log: ${join(tmpdir(), `callgrind-ab-${name}.log`)}): ${err.message}`);
    });
    targets.push({ name, pid: cp.pid!, url: `http://127.0.0.1:${port}`, prefix, seen: new Set() });
  }
  const headers = () => ({ authorization: `Bearer ${KEY}`, 'x-forwarded-for': nextIp() });
  const load = (t: Target, seconds: number) =>
    runLoad([{ url: t.url, path: PATH, connections, duration: seconds, headers }]);
  for (const t of targets) {
    const r = await load(t, warmup);
    console.log(`warm-up ${t.name}: ${Math.round(r.rps)} req/s ${JSON.stringify(r.statuses)}`);
  }
  const irs: Record<string, number[]> = {};
  for (let round = 0; round < rounds; round++) {
    for (const t of round % 2 ? [...targets].reverse() : targets) {
      await load(t, 1);
      dumpedIr(t.prefix, t.seen); // anything dumped before this window
      control('-z', String(t.pid));
      control('-i', 'on', String(t.pid));
      const r = await load(t, duration);
      control('-d', String(t.pid));
      control('-i', 'off', String(t.pid));
      // The dump is written by the process itself, at its next scheduling.
      let ir = 0;
      for (let i = 0; i < 50 && ir === 0; i++) {
        await new Promise((res) => setTimeout(res, 200));
        ir = dumpedIr(t.prefix, t.seen);
      }
      // The requests counted are the responses of the window; the few in flight at its edges move it by
      // about connections / requests.
      const perReq = ir / r.requests;
      (irs[t.name] ??= []).push(perReq);
      console.log(
        `round ${round + 1} ${t.name.padEnd(10)} ${r.requests} requests  ${(perReq / 1000).toFixed(1)} k instructions/req  non-2xx ${r.non2xx}`,
      );
    }
  }
  const base = irs[targets[0].name];
  for (const t of targets) {
    const ratios = irs[t.name].map((v, i) => v / base[i]);
    console.log(
      `${t.name.padEnd(10)} median ${(median(irs[t.name]) / 1000).toFixed(1)} k instructions/req, x ${targets[0].name} ${median(ratios).toFixed(3)} [${ratios.map((x) => x.toFixed(3)).join(', ')}]`,
    );
  }
  await stopBeforeDrop(procs, 20_000);
  await drop();
}

runThenStop(main, procs);

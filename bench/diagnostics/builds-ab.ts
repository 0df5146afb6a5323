// Diagnostic A/B of gateway builds (bench/RESULTS.md, "the forwarding path, per commit"): two or more compiled keygate
// builds (and the bare proxy) side by side in front of the trivial upstream, on one private
// redis-server and one PostgreSQL schema, interleaved over rounds: CPU µs per request of each process
// (user + system from /proc/<pid>/stat over the window) and its ratio to the first target, round by
// round, and the read and write system calls per request of each (/proc/<pid>/io: a count, steady
// on a busy machine); with AB_FIXED, each target also at a fixed paced rate, with the slow requests grouped into
// episodes (when in the window they came, how many, how slow) and the event-loop lag the gateway saw.
//
// Build each variant first (the working tree as it is when compiled):
//   npx tsc -p tsconfig.build.json --outDir bench/.build/<name> && cp -r src/db/migrations bench/.build/<name>/db/
// Run:
//   AB_TARGETS="bare=bare;a=bench/.build/a/cli.js;b=bench/.build/b/cli.js" npx tsx bench/diagnostics/builds-ab.ts
// A target is name=entry, entry `bare`, `undici-min`, `floor` (node:http + undici dispatch, no checks:
// bench/peers/dispatch-floor.mjs), `parser-floor` (node:http or, with `@%FLOOR=raw`, raw sockets, over raw
// sockets and node's parser: bench/peers/parser-floors.mjs) or a keygate cli.js; `@--flag` adds a node flag
// and `@%NAME=value` an environment variable to that target (e.g. `b=...cli.js@%ACCESS_LOG=on`).
// AB_SAMPLED=on measures what tracing a request costs, inside each keygate process (so no draw of one
// process against another enters): every keygate target exports to an OTLP sink with the
// parent-based sampler at 1 %, and each round loads it twice, every request carrying a W3C
// `traceparent` marked sampled in one window and not sampled in the other. The difference per request
// is what a sampled request adds; at a 1 % ratio tracing adds a hundredth of it, plus the hooks every
// request runs (bench/diagnostics/tracing-cost.ts).
// Settings: AB_ROUNDS (3), AB_DURATION (5 s), AB_FIXED (req/s, off; CPU per request at that paced
// rate too), AB_SATURATE (on; `off` runs only the paced rounds), AB_WARMUP_CONNECTIONS (50: the first
// load each process sees, 3 s saturating; more connections leave more requests in flight at its first
// young collections), DATABASE_URL (required).
// Each process's output goes to /tmp/builds-ab-<name>.log (e.g. with `@--trace-gc`).
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runLoad, runPaced, nextIp } from '../load.js';
import { HOP_PATH as PATH, OTLP_SINK, hopSeed, ticks, traceparent, tree } from '../hop.js';
import { freePort, waitForPort } from '../procs.js';
import { freshSchema, runThenStop, startRedisAndUpstream, stopBeforeDrop } from './stack.js';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** Targets that are not keygate builds: their files in bench/peers/. */
const PEER_FILES: Record<string, string> = {
  bare: 'bare-proxy.mjs',
  'undici-min': 'undici-min.mjs',
  floor: 'dispatch-floor.mjs',
  'parser-floor': 'parser-floors.mjs',
};
const PEERS = join(ROOT, 'bench', 'peers');
const env = process.env;
const rounds = Number(env.AB_ROUNDS ?? 3);
const duration = Number(env.AB_DURATION ?? 5);
const warmupConnections = Number(env.AB_WARMUP_CONNECTIONS ?? 50);
const databaseUrl = env.DATABASE_URL;
const KEY = 'svc_ws_' + randomBytes(30).toString('hex').slice(0, 40);
const SECRET = randomBytes(32).toString('hex');
const procs: ChildProcess[] = [];

const start = (name: string, cmd: string, args: string[], e: Record<string, string>) => {
  const out = openSync(join(tmpdir(), `builds-ab-${name}.log`), 'w');
  const cp = spawn(cmd, args, {
    env: { PATH: env.PATH ?? '', HOME: env.HOME ?? tmpdir(), NODE_ENV: 'production', ...e },
    stdio: ['ignore', out, out],
  });
  procs.push(cp);
  return cp;
};
/** CPU time of processes so far, in µs (clock ticks of 10 ms). */
const cpuUs = (pids: number[]) => ticks(pids) * 10_000;
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

/** A load on one target, and the CPU its processes spent on it per request. */
async function measured<R extends { requests: number }>(t: Target, load: () => Promise<R>) {
  const pids = tree(t.pid);
  const c0 = cpuUs(pids);
  const s0 = syscalls(pids);
  const r = await load();
  return { r, us: (cpuUs(pids) - c0) / r.requests, calls: (syscalls(pids) - s0) / r.requests };
}

/**
 * The read and write system calls of processes so far (`syscr` + `syscw` of /proc/<pid>/io: every
 * thread's, sockets included): a count, so unlike CPU time it does not move with the machine's load.
 */
function syscalls(pids: number[]): number {
  let n = 0;
  for (const pid of pids) {
    try {
      const io = readFileSync(`/proc/${pid}/io`, 'utf8');
      n += Number(/^syscr: (\d+)/m.exec(io)?.[1] ?? 0) + Number(/^syscw: (\d+)/m.exec(io)?.[1] ?? 0);
    } catch {
      // gone, or not ours to read: counted as none
    }
  }
  return n;
}

/** One saturating window of `duration` s at 50 connections, after a second of warm-up. */
async function saturated(t: Target, headers: () => Record<string, string>) {
  await runLoad([{ url: t.url, path: PATH, connections: 50, duration: 1, headers }]);
  return measured(t, () => runLoad([{ url: t.url, path: PATH, connections: 50, duration, headers }]));
}

/** AB_SAMPLED: each keygate target, round by round, with every request sampled and with none (see the head). */
async function sampledRounds(targets: Target[], headers: () => Record<string, string>) {
  const keygates = targets.filter((t) => t.adminPort !== null);
  const rows: Record<string, { off: number[]; on: number[] }> = {};
  for (let round = 0; round < rounds; round++) {
    for (const t of round % 2 ? [...keygates].reverse() : keygates) {
      for (const sampled of round % 2 ? [true, false] : [false, true]) {
        const h = () => ({ ...headers(), traceparent: traceparent(sampled) });
        const { r, us } = await saturated(t, h);
        (rows[t.name] ??= { off: [], on: [] })[sampled ? 'on' : 'off'].push(us);
        console.log(
          `round ${round + 1} ${t.name.padEnd(12)} ${sampled ? 'all sampled ' : 'none sampled'} ${Math.round(r.rps)} req/s  CPU ${us.toFixed(1)} µs/req  non-2xx ${r.non2xx}`,
        );
      }
    }
  }
  for (const [name, { off, on }] of Object.entries(rows)) {
    const added = on.map((v, i) => v - off[i]);
    const at1 = median(added.map((a, i) => (0.01 * a) / off[i]));
    console.log(
      `${name.padEnd(12)} none sampled ${median(off).toFixed(1)} µs/req, all sampled ${median(on).toFixed(1)} µs/req; a sampled request adds ${median(added).toFixed(1)} µs [${added.map((a) => a.toFixed(1)).join(', ')}]; at 1 %: +${(100 * at1).toFixed(2)} % of a request, besides the hooks`,
    );
  }
}

interface Target {
  name: string;
  pid: number;
  url: string;
  adminPort: number | null;
}

async function main() {
  if (!databaseUrl) throw new Error('set DATABASE_URL (keygate reads its key from PostgreSQL)');
  // Ports from the bench's checked allocator (bench/ports.ts): counting up from a random port in
  // 40000-60000, unchecked, left one of six keygate targets without its port.
  const { redisPort, upstreamPort } = await startRedisAndUpstream(start);
  const { url: dbUrl, drop } = await freshSchema(databaseUrl, 'ab');
  const work = mkdtempSync(join(tmpdir(), 'builds-ab-'));
  const seed = join(work, 'seed.json');
  writeFileSync(seed, JSON.stringify(hopSeed(KEY)));
  const common = {
    HOST: '127.0.0.1',
    UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    API_KEY: KEY,
    WORKSPACE_ID: '100',
    GATEWAY_SECRET: SECRET,
  };

  const sampledMode = env.AB_SAMPLED === 'on';
  const otel: Record<string, string> = {};
  if (sampledMode) {
    const sinkPort = await freePort();
    start('otlp-sink', process.execPath, ['-e', OTLP_SINK], { PORT: String(sinkPort) });
    await waitForPort(sinkPort, 10_000);
    Object.assign(otel, {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}`,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
      OTEL_SERVICE_NAME: 'keygate-ab',
    });
  }

  const targets: Target[] = [];
  for (const spec of (env.AB_TARGETS ?? 'bare=bare').split(';')) {
    const eq = spec.indexOf('=');
    const [name, [entry, ...extra]] = [spec.slice(0, eq), spec.slice(eq + 1).split('@')];
    const flags = extra.filter((x) => !x.startsWith('%'));
    const vars = Object.fromEntries(extra.filter((x) => x.startsWith('%')).map((x) => x.slice(1).split('=')));
    const p = await freePort();
    let cp: ChildProcess;
    let adminPort: number | null = null;
    if (entry in PEER_FILES) {
      cp = start(name, process.execPath, [...flags, join(PEERS, PEER_FILES[entry])], {
        ...common,
        PORT: String(p),
        ...vars,
      });
    } else {
      adminPort = await freePort();
      cp = start(name, process.execPath, [...flags, resolve(ROOT, entry), 'gateway'], {
        ...common,
        PORT: String(p),
        ADMIN_PORT: String(adminPort),
        BACKEND_PORT: String(await freePort()),
        DATABASE_URL: dbUrl.toString(),
        INTERNAL_TOKEN: randomBytes(24).toString('hex'),
        TRUST_PROXY: '127.0.0.1,::1',
        PLANS_FILE: join(ROOT, 'bench', 'plans.json'),
        SEED_FILE: seed,
        ACCESS_LOG: 'off',
        ...otel,
        ...vars,
      });
    }
    // Listening, or the run stops here with the target's name (one at a time: each keygate start migrates
    // and seeds the schema, and listens only once that is done).
    await waitForPort(p, 90_000).catch((err) => {
      throw new Error(`${name} did not start (log: ${join(tmpdir(), `builds-ab-${name}.log`)}): ${err.message}`);
    });
    targets.push({ name, pid: cp.pid!, url: `http://127.0.0.1:${p}`, adminPort });
  }
  const headers = () => ({ authorization: `Bearer ${KEY}`, 'x-forwarded-for': nextIp() });
  for (const t of targets) {
    const r = await runLoad([{ url: t.url, path: PATH, connections: warmupConnections, duration: 3, headers }]);
    console.log(`warm-up ${t.name}: ${Math.round(r.rps)} req/s ${JSON.stringify(r.statuses)}`);
  }

  if (sampledMode) await sampledRounds(targets, headers);

  const cpu: Record<string, number[]> = {};
  const reads: Record<string, number[]> = {};
  for (let round = 0; round < (env.AB_SATURATE === 'off' || sampledMode ? 0 : rounds); round++) {
    for (const t of round % 2 ? [...targets].reverse() : targets) {
      const { r, us, calls } = await saturated(t, headers);
      (cpu[t.name] ??= []).push(us);
      (reads[t.name] ??= []).push(calls);
      console.log(
        `round ${round + 1} ${t.name.padEnd(12)} ${Math.round(r.rps)} req/s  p99 ${r.p99.toFixed(1)} ms  CPU ${us.toFixed(1)} µs/req  read+write calls ${calls.toFixed(2)}/req  non-2xx ${r.non2xx}`,
      );
    }
  }
  const base = cpu[targets[0].name] ?? [];
  for (const t of base.length > 0 ? targets : []) {
    const ratios = cpu[t.name].map((v, i) => v / base[i]);
    console.log(
      `${t.name.padEnd(12)} CPU median ${median(cpu[t.name]).toFixed(1)} µs/req, x ${targets[0].name} ${median(ratios).toFixed(3)} [${ratios.map((x) => x.toFixed(2)).join(', ')}]; read+write calls median ${median(reads[t.name]).toFixed(2)}/req`,
    );
  }

  if (env.AB_FIXED) {
    const rate = Number(env.AB_FIXED);
    const lagOf = async (t: Target) => {
      if (t.adminPort === null) return '';
      const text = await (await fetch(`http://127.0.0.1:${t.adminPort}/metrics`)).text();
      return /^keygate_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1] ?? '';
    };
    // CPU per request at one offered load: every process batches alike (under saturation a process
    // the machine slows gets fewer requests per turn and pays more per request).
    const fixedCpu: Record<string, number[]> = {};
    for (let round = 0; round < rounds; round++) {
      for (const t of round % 2 ? [...targets].reverse() : targets) {
        await lagOf(t); // prom-client resets its loop-delay histogram at each scrape
        const slow: [number, number][] = [];
        const t0 = performance.now();
        const { r, us } = await measured(t, () =>
          runPaced({
            url: t.url,
            path: PATH,
            connections: 50,
            duration,
            rate,
            headers,
            onSample: (origin, ms) => void (ms > 5 && slow.push([origin - t0, ms])),
          }),
        );
        (fixedCpu[t.name] ??= []).push(us);
        const lag = await lagOf(t);
        // Slow requests (> 5 ms) grouped into episodes: gaps of more than 20 ms between them.
        const episodes: string[] = [];
        let first = 0;
        let last = -Infinity;
        let n = 0;
        let worst = 0;
        const flush = () => n && episodes.push(`@${first.toFixed(0)} ms n=${n} max=${worst.toFixed(0)}`);
        for (const [at, ms] of slow.sort((a, b) => a[0] - b[0])) {
          if (at - last > 20) {
            flush();
            [first, n, worst] = [at, 0, 0];
          }
          last = at;
          n++;
          worst = Math.max(worst, ms);
        }
        flush();
        const top = episodes.sort((a, b) => Number(/n=(\d+)/.exec(b)![1]) - Number(/n=(\d+)/.exec(a)![1])).slice(0, 5);
        console.log(
          `fixed ${rate} req/s round ${round + 1} ${t.name.padEnd(12)} CPU ${us.toFixed(1)} µs/req  p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(2)} ms${lag ? `  loop lag max ${(Number(lag) * 1000).toFixed(0)} ms` : ''}  largest slow episodes: ${top.join('; ')}`,
        );
      }
    }
    const fixedBase = fixedCpu[targets[0].name];
    for (const t of targets) {
      const ratios = fixedCpu[t.name].map((v, i) => v / fixedBase[i]);
      console.log(
        `fixed ${rate} req/s ${t.name.padEnd(12)} CPU median ${median(fixedCpu[t.name]).toFixed(1)} µs/req, x ${targets[0].name} ${median(ratios).toFixed(3)} [${ratios.map((x) => x.toFixed(2)).join(', ')}]`,
      );
    }
  }
  await stopBeforeDrop(procs);
  await drop();
}

runThenStop(main, procs);

// `BENCH_SUITE=hop npm run bench`: what one hop costs in front of a trivial upstream (bench/peers/upstream.mjs,
// node:http answering a 110-byte JSON body), where the hop is what a user pays for. Loads, in turn and
// interleaved over rounds: the upstream direct, nginx (when installed), bare http-proxy-3, keygate's
// gateway (the compiled program, `node cli.js gateway`, one process and WORKERS=2), and the peers of
// bench/peers/ (fastify, express, undici-min: the same checks with popular parts). The headline figure
// is the CPU time of the process under test per request; ratios to the bare proxy are taken round by
// round. Then, per round, the bare proxy and keygate at a fixed offered load (half the bare proxy's
// throughput of that round): the p99 keygate adds. That load is load.ts's runPaced, open loop and evenly
// paced as wrk2's, latency timed from each request's intended send time (autocannon's overallRate sends
// each second's quota in a burst, so its "half load" was saturation then idleness). Every target runs as
// BENCH_PROCESSES independent processes, each measured in a slot of its own every round (the slots
// interleaved and rotated, bench/hop-stats.ts slotOrder): CPU per request differs by 10 to 15 % between
// two processes of one build, so a target's figure is the median over its processes and rounds, its
// ratios are of those pooled medians, and each verdict says the baseline's spread between processes.
// Settings (environment):
//   BENCH_ROUNDS (1)  BENCH_WARMUP (3 s)  BENCH_DURATION (10 s)  BENCH_CONNECTIONS (50)
//   BENCH_PROCESSES (3) processes per target
//   BENCH_TARGETS      comma subset of the targets below (all)
//   BENCH_DATABASE_URL or DATABASE_URL   PostgreSQL for keygate (a schema of its own, dropped after);
//                      unset: keygate's rows are skipped (the gateway program needs PostgreSQL)
//   BENCH_RESULTS_DIR  where the JSON goes (bench/results)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { once } from 'node:events';
import { createHmac, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';
import { freePort, waitForPort, which } from './procs.js';
import { nextIp, runLoad, runPaced, type LoadResult } from './load.js';
import { median, noiseLine, pooled, ratio, slotOrder, verdict, type Ratio } from './hop-stats.js';
import { machine, nginxConf } from './suite.js';
import { tracingHooksCost } from './diagnostics/tracing-cost.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PEERS = join(ROOT, 'bench', 'peers');
/** The OTLP/HTTP sink keygate-traced exports to: it reads each export and answers an empty success. */
export const OTLP_SINK = `require('node:http')
  .createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  })
  .listen(Number(process.env.PORT), '127.0.0.1');`;

/** keygate compiled as the Docker image runs it (git-ignored, under bench/.build like the backend suite's). */
const BUILD = join(ROOT, 'bench', '.build', 'hop');
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

export const HOP_TARGETS = [
  'direct',
  'nginx',
  'bare',
  'keygate',
  'keygate-2w',
  'keygate-access-log',
  'keygate-traced',
  'fastify',
  'express',
  'undici-min',
] as const;
type TargetId = (typeof HOP_TARGETS)[number];
const TITLES: Record<TargetId, string> = {
  direct: 'upstream direct (ceiling, no hop)',
  nginx: 'nginx, 1 worker, no checks',
  bare: 'bare http-proxy-3, no checks',
  keygate: 'keygate gateway (ACCESS_LOG=off)',
  'keygate-2w': 'keygate gateway, WORKERS=2 (ACCESS_LOG=off)',
  'keygate-access-log': 'keygate gateway, default ACCESS_LOG=on',
  'keygate-traced': 'keygate gateway, OpenTelemetry at 1 % (ACCESS_LOG=off)',
  fastify: 'fastify + @fastify/http-proxy + @fastify/rate-limit',
  express: 'express + http-proxy-middleware + express-rate-limit',
  'undici-min': 'undici-min (node:http + undici Pool)',
};
/** Peers and the npm packages each needs (bench/peers/*.mjs). */
const PEER_FILES: Partial<Record<TargetId, { file: string; packages: string[] }>> = {
  bare: { file: 'bare-proxy.mjs', packages: ['http-proxy-3'] },
  fastify: { file: 'fastify-peer.mjs', packages: ['fastify', '@fastify/http-proxy', '@fastify/rate-limit', 'ioredis'] },
  express: {
    file: 'express-peer.mjs',
    packages: ['express', 'http-proxy-middleware', 'express-rate-limit', 'rate-limit-redis', 'ioredis'],
  },
  'undici-min': { file: 'undici-min.mjs', packages: ['undici', 'ioredis'] },
};

const WS = 100;
const PATH = `/v2/workspaces/${WS}/tags`;
export const HOP_PATH = PATH;
const READ_SCOPES = [
  'accounts:read',
  'warmup:read',
  'tags:read',
  'analytics:read',
  'notifications:read',
  'billing:read',
  'workspace:read',
];
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const randomAlnum = (n: number) => Array.from(randomBytes(n), (b) => ALNUM[b % ALNUM.length]).join('');

export interface HopOptions {
  rounds: number;
  warmup: number;
  duration: number;
  connections: number;
  /** Independent processes per target, each measured every round (3). */
  processes?: number;
  only?: string[];
  databaseUrl?: string;
  resultsDir: string;
  signal?: AbortSignal;
}

interface Proc {
  name: string;
  cp: ChildProcess;
  pid: number;
  exited: boolean;
  log: string;
}

interface Target {
  id: TargetId;
  /** Which of the target's processes, 1-based. */
  proc: number;
  /** The target's id, with `#<proc>` when it runs as several processes. */
  name: string;
  url: string;
  pids: () => number[];
  checks: boolean;
}

interface RoundRow {
  round: number;
  proc: number;
  rps: number;
  requests: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  cpuUs: number;
  cpuCores: number;
  redisUs: number;
  redisScriptsPerReq: number;
  othersCores: number;
  rssMB: number;
}

interface FixedRound {
  round: number;
  rate: number;
  bareProc: number;
  keygateProc: number;
  bare: { rps: number; p50: number; p99: number };
  keygate: { rps: number; p50: number; p99: number };
  p99AddedMs: number;
}

/** One round of the tracing measure inside a keygate-traced process: every request sampled, and none. */
interface SampledRound {
  round: number;
  proc: number;
  noneUs: number;
  allUs: number;
  addedUs: number;
}

/** A W3C traceparent with fresh ids, marked sampled (flags 01) or not (00). */
export function traceparent(sampled: boolean): string {
  const ids = randomBytes(24).toString('hex');
  return `00-${ids.slice(0, 32)}-${ids.slice(32)}-0${sampled ? 1 : 0}`;
}

/** keygate's seed for the suite: one organization on growth, one workspace, one key with read scopes. */
export function hopSeed(key: string) {
  return {
    organizations: [{ id: 1, name: 'Hop', plan: 'growth', apiAccess: true, paused: false }],
    users: [{ id: 10, organizationId: 1, email: 'owner@hop.test', orgRole: 'OWNER' }],
    workspaces: [{ id: WS, organizationId: 1, name: 'Hop' }],
    memberships: [{ workspaceId: WS, userId: 10, role: 'OWNER' }],
    apiKeys: [{ id: 1000, secret: key, name: 'hop', workspaceId: WS, role: 'ADMIN', scopes: READ_SCOPES }],
  };
}

// ---------------------------------------------------------------- /proc readings
function ticksOf(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]); // utime + stime
  } catch {
    return 0;
  }
}
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
/** A process and its children: nginx's master and worker, keygate's cluster primary and its workers. */
export const tree = (pid: number) => [pid, ...childrenOf(pid)];
/** CPU time (user + system) of processes so far, in clock ticks (100 a second). */
export const ticks = (pids: number[]) => pids.reduce((a, p) => a + ticksOf(p), 0);
function machineTicks() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - f[3] - f[4], total };
}
function rssMB(pids: number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      kb += Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      /* gone */
    }
  }
  return Math.round(kb / 1024);
}

const f = (v: number, d: number) => (Number.isFinite(v) ? v.toFixed(d) : '-');

/** Whether node can load the packages a peer needs (their engines say Node 22 for some majors). */
function cannotLoad(packages: string[]): string | null {
  const code = `Promise.all(${JSON.stringify(packages)}.map((p) => import(p))).then(() => process.exit(0), (e) => { console.error(String(e.message).split('\\n')[0]); process.exit(1); })`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return r.status === 0 ? null : r.stderr.trim() || `exit ${r.status}`;
}

export async function runHopSuite(o: HopOptions) {
  const want = (o.only?.length ? o.only : [...HOP_TARGETS]) as TargetId[];
  for (const t of want)
    if (!HOP_TARGETS.includes(t)) throw new Error(`BENCH_TARGETS: unknown ${t} (known: ${HOP_TARGETS.join(', ')})`);
  const P = o.processes ?? 3;
  if (!Number.isInteger(P) || P < 1) throw new Error(`BENCH_PROCESSES must be a whole number >= 1, got ${P}`);
  /** The k-th process of a target (1-based): its name in the logs and the table. */
  const nameOf = (id: TargetId, k: number) => (P === 1 ? id : `${id}#${k}`);
  const startedAt = new Date();
  const work = mkdtempSync(join(tmpdir(), 'keygate-hop-'));
  const logDir = join(o.resultsDir, 'logs', `hop-${startedAt.toISOString().replace(/[:.]/g, '-')}`);
  mkdirSync(logDir, { recursive: true });
  const log = (s: string) => process.stdout.write(s + '\n');
  const skipped: { target: string; reason: string }[] = [];
  const skip = (target: string, reason: string) => {
    skipped.push({ target, reason });
    log(`${target}: skipped: ${reason}`);
  };
  const KEY = 'svc_ws_' + randomAlnum(40);
  const SECRET = randomBytes(32).toString('hex');
  const bearer = `Bearer ${KEY}`;

  // ---- Processes: ours only, stopped by pid.
  const procs: Proc[] = [];
  const cleanup: (() => Promise<unknown>)[] = [];
  const start = (name: string, cmd: string, args: string[], env: Record<string, string>, cwd = ROOT): Proc => {
    const logFile = join(logDir, `${name}.log`);
    const out = openSync(logFile, 'a');
    const cp = spawn(cmd, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? work, NODE_ENV: 'production', ...env },
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    cp.on('error', (err) => log(`${name}: ${err.message}`));
    const p: Proc = { name, cp, pid: cp.pid ?? -1, exited: false, log: logFile };
    cp.once('exit', () => (p.exited = true));
    procs.push(p);
    return p;
  };
  const stop = async (p: Proc) => {
    if (p.exited) return;
    const exited = once(p.cp, 'exit');
    p.cp.kill('SIGTERM');
    const t = setTimeout(() => !p.exited && p.cp.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(t);
  };
  const stopAll = async () => {
    for (const p of procs.splice(0).reverse()) await stop(p).catch(() => {});
    for (const c of cleanup.splice(0).reverse()) await c().catch((e) => log(`cleanup: ${(e as Error).message}`));
    rmSync(work, { recursive: true, force: true });
  };
  const onAbort = () => void stopAll();
  o.signal?.addEventListener('abort', onAbort, { once: true });
  const tail = (file: string) => {
    try {
      return readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' | ');
    } catch {
      return '';
    }
  };
  /** Started and listening, or the reason it is not (its log's last lines). */
  const listening = async (p: Proc, port: number, ms: number): Promise<string | null> => {
    try {
      await Promise.race([waitForPort(port, ms), once(p.cp, 'exit').then(() => Promise.reject(new Error('exited')))]);
      return null;
    } catch (err) {
      return `${(err as Error).message}: ${tail(p.log)}`;
    }
  };

  try {
    log(`work dir ${work}, logs in ${logDir}`);
    // ---- A private redis-server, so its CPU and INFO commandstats count this run alone.
    const redisBin = await which('redis-server');
    if (!redisBin) throw new Error('redis-server is not on PATH (the limits of keygate and the peers live in Redis)');
    const redisPort = await freePort();
    const redisProc = start(
      'redis',
      redisBin,
      ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work],
      {},
    );
    await waitForPort(redisPort, 10_000);
    const REDIS_URL = `redis://127.0.0.1:${redisPort}`;
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    cleanup.push(async () => redis.disconnect());

    // ---- The trivial upstream.
    const upPort = await freePort();
    const upstream = start('upstream', process.execPath, [join(PEERS, 'upstream.mjs')], {
      PORT: String(upPort),
      HOST: '127.0.0.1',
    });
    await waitForPort(upPort, 10_000);
    const UPSTREAM_URL = `http://127.0.0.1:${upPort}`;

    // Every target as P processes: target k of id is named nameOf(id, k); one that does not start is
    // skipped alone and its siblings still run.
    const targets: Target[] = [];
    const add = (id: TargetId, k: number, port: number, pids: () => number[], checks: boolean) =>
      targets.push({ id, proc: k, name: nameOf(id, k), url: `http://127.0.0.1:${port}`, pids, checks });
    // direct: the first is the upstream every hop forwards to; the others are upstreams of their own,
    // loaded only in their own slots.
    if (want.includes('direct'))
      for (let k = 1; k <= P; k++) {
        if (k === 1) {
          add('direct', 1, upPort, () => [upstream.pid], false);
          continue;
        }
        const port = await freePort();
        const up = start(nameOf('direct', k), process.execPath, [join(PEERS, 'upstream.mjs')], {
          PORT: String(port),
          HOST: '127.0.0.1',
        });
        const why = await listening(up, port, 10_000);
        if (why) skip(nameOf('direct', k), why);
        else add('direct', k, port, () => [up.pid], false);
      }

    if (want.includes('nginx')) {
      const nginxBin = await which('nginx');
      if (!nginxBin) skip('nginx', 'not installed (apt-get install -y nginx-light)');
      else
        for (let k = 1; k <= P; k++) {
          const port = await freePort();
          const dir = join(work, `nginx-${k}`); // its own configuration, pid file and temporary paths
          mkdirSync(dir);
          const ng = start(
            nameOf('nginx', k),
            nginxBin,
            ['-p', dir, '-c', nginxConf(dir, port, UPSTREAM_URL), '-g', 'daemon off;'],
            {},
          );
          const why = await listening(ng, port, 10_000);
          if (why) skip(nameOf('nginx', k), why);
          else add('nginx', k, port, () => tree(ng.pid), false);
        }
    }

    const peerEnv = {
      HOST: '127.0.0.1',
      UPSTREAM_URL,
      REDIS_URL,
      API_KEY: KEY,
      GATEWAY_SECRET: SECRET,
      WORKSPACE_ID: String(WS),
      RATE_LIMIT: '1000000000',
    };
    const startPeer = async (id: TargetId) => {
      const peer = PEER_FILES[id]!;
      if (!want.includes(id)) return;
      const why = cannotLoad(peer.packages);
      if (why) return skip(id, `cannot run on node ${process.version}: ${why}`);
      for (let k = 1; k <= P; k++) {
        const port = await freePort();
        const p = start(nameOf(id, k), process.execPath, [join(PEERS, peer.file)], { ...peerEnv, PORT: String(port) });
        const down = await listening(p, port, 20_000);
        if (down) skip(nameOf(id, k), down);
        else add(id, k, port, () => [p.pid], id !== 'bare');
      }
    };
    await startPeer('bare');

    // ---- keygate: the compiled program, a seed with one organization on growth and one key, the bench's plans (1e9 a minute).
    const kgWanted = want.filter((t) => t.startsWith('keygate'));
    if (kgWanted.length && !o.databaseUrl)
      for (const t of kgWanted) skip(t, 'the gateway program needs PostgreSQL: set BENCH_DATABASE_URL or DATABASE_URL');
    else if (kgWanted.length) {
      const entry = compileKeygate(log);
      const schema = `hop_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: o.databaseUrl });
      await admin.connect();
      await admin.query(`CREATE SCHEMA "${schema}"`).finally(() => admin.end());
      cleanup.unshift(async () => {
        const c = new pg.Client({ connectionString: o.databaseUrl });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
      });
      const dbUrl = new URL(o.databaseUrl!);
      dbUrl.searchParams.set('options', `-c search_path=${schema}`);
      const seedFile = join(work, 'keygate-seed.json');
      writeFileSync(seedFile, JSON.stringify(hopSeed(KEY)));
      // keygate-traced exports its spans over OTLP/HTTP to a sink of its own process: neither the
      // gateway's CPU nor the load generator's event loop (a sink in the parent slows the generator in
      // the traced target's windows only, and a gateway offered less load spends more CPU per request).
      let otlp = '';
      if (kgWanted.includes('keygate-traced')) {
        const sinkPort = await freePort();
        start('otlp-sink', process.execPath, ['-e', OTLP_SINK], { PORT: String(sinkPort) });
        await waitForPort(sinkPort, 10_000);
        otlp = `http://127.0.0.1:${sinkPort}`;
      }
      // One at a time: each start migrates and seeds the same schema.
      for (const [id, k] of kgWanted.flatMap((id) => Array.from({ length: P }, (_, i) => [id, i + 1] as const))) {
        const [port, adminPort] = [await freePort(), await freePort()];
        const kg = start(nameOf(id, k), process.execPath, [entry, 'gateway'], {
          PORT: String(port),
          ADMIN_PORT: String(adminPort),
          BACKEND_PORT: String(await freePort()),
          HOST: '127.0.0.1',
          UPSTREAM_URL,
          DATABASE_URL: dbUrl.toString(),
          REDIS_URL,
          GATEWAY_SECRET: SECRET,
          INTERNAL_TOKEN: randomBytes(24).toString('hex'),
          TRUST_PROXY: '127.0.0.1,::1',
          PLANS_FILE: join(ROOT, 'bench', 'plans.json'),
          SEED_FILE: seedFile,
          LOG_LEVEL: 'info',
          // The peers log nothing per request; keygate's access line is measured on its own row.
          ACCESS_LOG: id === 'keygate-access-log' ? 'on' : 'off',
          WORKERS: id === 'keygate-2w' ? '2' : '1',
          // Tracing at 1 % (parent-based: the generator sends no traceparent, so each request is a root).
          ...(id === 'keygate-traced'
            ? {
                OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
                OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
                OTEL_TRACES_SAMPLER_ARG: '0.01',
                OTEL_SERVICE_NAME: 'keygate-bench',
              }
            : {}),
          // node:cluster's own switch (rr, the default on Linux, or none: the kernel spreads the connections).
          ...(process.env.NODE_CLUSTER_SCHED_POLICY
            ? { NODE_CLUSTER_SCHED_POLICY: process.env.NODE_CLUSTER_SCHED_POLICY }
            : {}),
        });
        const deadline = Date.now() + 90_000;
        let ready = false;
        while (!ready && !kg.exited && Date.now() < deadline) {
          ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          );
          if (!ready) await new Promise((r) => setTimeout(r, 200));
        }
        if (!ready) skip(nameOf(id, k), `did not become ready: ${tail(kg.log)}`);
        else add(id, k, port, () => tree(kg.pid), true);
      }
    }
    for (const id of ['fastify', 'express', 'undici-min'] as const) await startPeer(id);

    // ---- Functional checks: every contender answers and refuses alike before it is loaded.
    log(
      '\nfunctional checks (200 with the key; 5 X-RateLimit-* headers; X-Request-Id; the upstream saw a valid HMAC identity and no Authorization; no key, unknown key, other workspace, missing scope):',
    );
    const checks: Awaited<ReturnType<typeof check>>[] = [];
    for (const t of targets) {
      const r = await check(t, UPSTREAM_URL, bearer, SECRET).catch((e) => ({
        target: t.name,
        error: (e as Error).message,
        ok: 0,
        pass: false,
      }));
      checks.push(r);
      log(`  ${t.name.padEnd(20)} ${JSON.stringify(r)}`);
    }
    const loadable = targets.filter((t) => {
      const c = checks.find((x) => x.target === t.name)!;
      if (c.ok !== 200 || (t.checks && !c.pass)) {
        skip(t.name, `failed its functional check: ${JSON.stringify(c)}`);
        return false;
      }
      return true;
    });

    // ---- Rounds: every process of every target once per round, in slots interleaved and rotated
    // (hop-stats.ts slotOrder).
    const ours = () => [process.pid, ...procs.flatMap((p) => (p.exited ? [] : tree(p.pid)))];
    const scripts = async () => {
      const info = await redis.info('commandstats');
      let n = 0;
      for (const m of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) n += Number(m[2]);
      return n;
    };
    const headers = () => ({ authorization: bearer, 'x-forwarded-for': nextIp() });
    const load = (url: string, seconds: number) =>
      runLoad([{ url, path: PATH, connections: o.connections, duration: seconds, headers }]);
    /** A fixed offered load, evenly paced (load.ts's runPaced: autocannon's overallRate comes in bursts). */
    const paced = (url: string, seconds: number, rate: number) =>
      runPaced({ url, path: PATH, connections: o.connections, duration: seconds, rate, headers });
    const results = new Map<TargetId, RoundRow[]>(loadable.map((t) => [t.id, []]));
    const fixed: FixedRound[] = [];
    const sampledRounds: SampledRound[] = [];
    // Once, before round 1: every target twice the warm-up, so that no round-1 window carries a fresh
    // process's JIT compilation (the WORKERS=2 row has two processes to warm, each seeing half the load).
    log(`\nfirst warm-up: ${2 * o.warmup} s per process`);
    for (const t of loadable) await load(t.url, 2 * o.warmup);
    const ids = [...new Set(loadable.map((t) => t.id))];
    const groups = ids.map((id) => ({ target: id, procs: loadable.filter((t) => t.id === id).map((t) => t.proc) }));
    const instance = (id: TargetId, proc: number) => loadable.find((t) => t.id === id && t.proc === proc)!;
    log(
      `${o.rounds} round(s) of ${loadable.length} slots (${P} process(es) per target); per slot ${o.warmup} s warm-up then ${o.duration} s at ${o.connections} connections, GET ${PATH}`,
    );
    for (let round = 1; round <= o.rounds; round++) {
      if (o.signal?.aborted) throw new Error('aborted');
      for (const slot of slotOrder(groups, round)) {
        const t = instance(slot.target, slot.proc);
        await load(t.url, o.warmup);
        const pids = t.pids();
        const b = {
          cpu: ticks(pids),
          redis: ticks([redisProc.pid]),
          ours: ticks(ours()),
          m: machineTicks(),
          scripts: await scripts(),
          t: performance.now(),
        };
        const r: LoadResult = await load(t.url, o.duration);
        const a = {
          cpu: ticks(pids),
          redis: ticks([redisProc.pid]),
          ours: ticks(ours()),
          m: machineTicks(),
          scripts: await scripts(),
          t: performance.now(),
        };
        const secs = (a.t - b.t) / 1000;
        const us = (dt: number) => (r.requests ? (dt * 1e6) / CLK_TCK / r.requests : NaN);
        const row: RoundRow = {
          round,
          proc: t.proc,
          rps: r.rps,
          requests: r.requests,
          p50: r.p50,
          p99: r.p99,
          errors: r.errors,
          non2xx: r.non2xx,
          cpuUs: us(a.cpu - b.cpu),
          cpuCores: (a.cpu - b.cpu) / CLK_TCK / secs,
          redisUs: us(a.redis - b.redis),
          redisScriptsPerReq: r.requests ? (a.scripts - b.scripts) / r.requests : NaN,
          othersCores: Math.max(0, (a.m.busy - b.m.busy - (a.ours - b.ours)) / CLK_TCK / secs),
          rssMB: rssMB(pids),
        };
        results.get(t.id)!.push(row);
        log(
          `  [${round}/${o.rounds}] ${t.name.padEnd(20)} ${f(row.rps, 0).padStart(6)} req/s  p50 ${f(row.p50, 2)} p99 ${f(row.p99, 2)} ms  non-2xx ${row.non2xx}  errors ${row.errors}  ` +
            `cpu ${f(row.cpuUs, 0)} µs/req (${f(row.cpuCores, 2)} cores)  redis ${f(row.redisUs, 1)} µs/req  others ${f(row.othersCores, 2)} cores`,
        );
      }
      // The latency keygate adds below saturation: both at half this round's bare-proxy throughput (the
      // median over its processes), the requests evenly spaced, each timed from when it was due, after a
      // warm-up at that rate. One process of each per round, taking turns over the rounds.
      const turn = (id: TargetId) => {
        const g = groups.find((x) => x.target === id);
        return g ? instance(id, g.procs[(round - 1) % g.procs.length]) : undefined;
      };
      const bare = turn('bare');
      const kg = turn('keygate');
      const bareRps = median((results.get('bare') ?? []).filter((x) => x.round === round).map((x) => x.rps));
      if (bare && kg && bareRps > 0) {
        const rate = Math.max(100, Math.round(bareRps / 2 / 100) * 100);
        const at = async (t: Target) => {
          // The same warm-up as before every full-load window, here at the paced rate: a process that sat
          // idle while the other targets ran can start its window slowly (builds-ab.ts at 6,500 req/s:
          // 1,774 requests up to 39 ms late in the first moments of one window, none later), and the
          // figure sought is the steady state's. Both targets get it.
          await paced(t.url, o.warmup, rate);
          const r = await paced(t.url, o.duration, rate);
          return { rps: r.rps, p50: r.p50, p99: r.p99 };
        };
        // Alternate which goes first, so neither always meets the machine's state after the other.
        const [first, second] = round % 2 ? [bare, kg] : [kg, bare];
        const one = await at(first);
        const two = await at(second);
        const [b, k] = first === bare ? [one, two] : [two, one];
        fixed.push({
          round,
          rate,
          bareProc: bare.proc,
          keygateProc: kg.proc,
          bare: b,
          keygate: k,
          p99AddedMs: k.p99 - b.p99,
        });
        log(
          `  [${round}/${o.rounds}] fixed ${rate} req/s paced (${bare.name}, ${kg.name}): bare p50 ${f(b.p50, 2)} p99 ${f(b.p99, 2)} ms, keygate p50 ${f(k.p50, 2)} p99 ${f(k.p99, 2)} ms, p99 added ${f(k.p99 - b.p99, 2)} ms`,
        );
      }
      // What tracing costs, measured inside one keygate-traced process so that no draw of one process
      // against another enters (they differ by 10 to 30 %): the same process with every request
      // sampled and with none (a W3C traceparent marked so; the sampler is parent-based), in turn.
      // At a 1 % ratio a hundredth of the difference is added, besides the hooks every request runs.
      const traced = turn('keygate-traced');
      if (traced) {
        const cpuOf = async (sampled: boolean) => {
          const h = () => ({ ...headers(), traceparent: traceparent(sampled) });
          await runLoad([{ url: traced.url, path: PATH, connections: o.connections, duration: o.warmup, headers: h }]);
          const pids = traced.pids();
          const c0 = ticks(pids);
          const r = await runLoad([
            { url: traced.url, path: PATH, connections: o.connections, duration: o.duration, headers: h },
          ]);
          return r.requests ? ((ticks(pids) - c0) * 1e6) / CLK_TCK / r.requests : NaN;
        };
        const [first, second] = round % 2 ? [false, true] : [true, false];
        const one = await cpuOf(first);
        const two = await cpuOf(second);
        const [noneUs, allUs] = first ? [two, one] : [one, two];
        sampledRounds.push({ round, proc: traced.proc, noneUs, allUs, addedUs: allUs - noneUs });
        log(
          `  [${round}/${o.rounds}] ${traced.name}: none sampled ${f(noneUs, 0)} µs/req, all sampled ${f(allUs, 0)} µs/req, a sampled request adds ${f(allUs - noneUs, 0)} µs`,
        );
      }
    }

    // ---- Summary: per target the median over its processes and rounds, and the spread between its
    // processes; ratios of those pooled medians (each round's ratio of medians in the JSON and brackets).
    const NONE: Ratio = {
      median: NaN,
      rounds: [],
      procs: [],
      base: { procs: [], lo: NaN, hi: NaN, rel: NaN },
      insideNoise: null,
    };
    const ratioOf = (id: TargetId, base: TargetId, pick: (x: RoundRow) => number): Ratio => {
      const rows = results.get(id);
      const baseRows = results.get(base);
      return rows?.length && baseRows?.length && id !== base ? ratio(rows, baseRows, pick) : NONE;
    };
    const summary = ids.map((id) => {
      const rs = results.get(id)!;
      const med = (pick: (x: RoundRow) => number) => median(rs.map(pick));
      const cpu = pooled(rs, (x) => x.cpuUs);
      const rps = pooled(rs, (x) => x.rps);
      // Each process's last reading, then the median over processes.
      const lastRss = groups
        .find((g) => g.target === id)!
        .procs.map((proc) => rs.filter((x) => x.proc === proc).at(-1)?.rssMB ?? NaN);
      return {
        target: id,
        title: TITLES[id],
        processes: groups.find((g) => g.target === id)!.procs.length,
        rps: rps.median,
        rpsRounds: rps.rounds.map(Math.round),
        xBare: ratioOf(id, 'bare', (x) => x.rps),
        p50: med((x) => x.p50),
        p99: med((x) => x.p99),
        non2xx: rs.reduce((n, x) => n + x.non2xx, 0),
        errors: rs.reduce((n, x) => n + x.errors, 0),
        cpuUs: cpu.median,
        cpuUsRounds: cpu.rounds.map(Math.round),
        cpuUsProcs: cpu.spread.procs.map((p) => Math.round(p.median)),
        cpuSpread: cpu.spread,
        cpuXBare: ratioOf(id, 'bare', (x) => x.cpuUs),
        redisUs: med((x) => x.redisUs),
        redisScriptsPerReq: med((x) => x.redisScriptsPerReq),
        othersCores: med((x) => x.othersCores),
        rssMB: median(lastRss),
        rssMBProcs: lastRss,
      };
    });
    const twoOverOne = ratioOf('keygate-2w', 'keygate', (x) => x.cpuUs);
    const tracedOverOff = ratioOf('keygate-traced', 'keygate', (x) => x.cpuUs);
    const kgCpu = ratioOf('keygate', 'bare', (x) => x.cpuUs);
    // Tracing at 1 %: the hooks' cost (measured in this process, tracing-cost.ts) and a hundredth of
    // what a sampled request adds, against the traced process's request with nothing sampled.
    let tracingAt1: { value: number; rounds: number[]; hooksUs: number; addedUs: number; requestUs: number } | null =
      null;
    if (sampledRounds.length) {
      const hooksUs = (await tracingHooksCost()).find((x) => x.name === '1 %')!.addedUs;
      const addedUs = median(sampledRounds.map((x) => x.addedUs));
      const requestUs = median(sampledRounds.map((x) => x.noneUs));
      tracingAt1 = {
        value: 1 + (hooksUs + 0.01 * addedUs) / requestUs,
        rounds: sampledRounds.map((x) => 1 + (hooksUs + 0.01 * x.addedUs) / x.noneUs),
        hooksUs,
        addedUs,
        requestUs,
      };
    }
    const p99Added = { median: median(fixed.map((x) => x.p99AddedMs)), rounds: fixed.map((x) => x.p99AddedMs) };
    const ratioTarget = (target: string, r: Ratio, limit: number, baseName: string) => ({
      target,
      value: r.median,
      rounds: r.rounds,
      verdict: verdict(r.median, limit),
      procs: r.procs,
      baseSpread: { lo: r.base.lo, hi: r.base.hi, rel: r.base.rel, processes: r.base.procs.length },
      insideNoise: r.insideNoise,
      noise: noiseLine(r, baseName),
    });
    const targetsOut = [
      ratioTarget('keygate CPU µs/req ≤ 1.10 × bare http-proxy-3', kgCpu, 1.1, 'bare'),
      ratioTarget('WORKERS=2 CPU µs/req ≤ 1.10 × one worker', twoOverOne, 1.1, 'keygate'),
      ...(tracingAt1
        ? [
            {
              target: 'tracing at 1 % CPU µs/req ≤ 1.05 × tracing off (inside the traced process)',
              value: tracingAt1.value,
              rounds: tracingAt1.rounds,
              verdict: verdict(tracingAt1.value, 1.05),
              noise: `hooks ${f(tracingAt1.hooksUs, 2)} µs + 1 % of ${f(tracingAt1.addedUs, 0)} µs a sampled request adds, on ${f(tracingAt1.requestUs, 0)} µs a request`,
            },
          ]
        : []),
      // Between processes, one traced against one untraced: within the processes' own spread (see its noise line).
      {
        ...ratioTarget('tracing at 1 % × tracing off, between processes', tracedOverOff, 1.05, 'keygate'),
        verdict: 'INFO',
      },
      {
        target: "p99 added ≤ +1 ms at half the bare proxy's throughput",
        value: p99Added.median,
        rounds: p99Added.rounds,
        verdict: verdict(p99Added.median, 1),
        noise: '',
      },
    ];

    const m = machine();
    const commit = spawnSync('git', ['-C', ROOT, 'log', '-1', '--format=%h %cI'], { encoding: 'utf8' }).stdout.trim();
    const dirty = spawnSync('git', ['-C', ROOT, 'status', '--porcelain', '--', 'src'], {
      encoding: 'utf8',
    }).stdout.trim()
      ? ' + uncommitted changes in src/'
      : '';
    log(`\n${m.cpus} x ${m.cpuModel}, ${m.memoryGB} GB, ${m.os}, node ${m.node}; keygate ${commit}${dirty}`);
    log(
      `${o.rounds} round(s) x ${P} process(es) per target x ${o.duration} s (after ${o.warmup} s warm-up), ${o.connections} connections, GET ${PATH} to a trivial upstream; medians over processes and rounds; ratios of those medians`,
    );
    log('');
    log(
      "| target | req/s | x bare | p50 ms | p99 ms | non-2xx | errors | CPU µs/req | CPU x bare | redis µs/req | scripts/req | RSS MB | others' load (cores) | CPU µs/req per round | CPU µs/req per process | spread between processes |",
    );
    log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|');
    for (const s of summary) {
      log(
        `| ${s.title} | ${f(s.rps, 0)} | ${f(s.xBare.median, 2)} | ${f(s.p50, 2)} | ${f(s.p99, 2)} | ${s.non2xx} | ${s.errors} | ${f(s.cpuUs, 0)} | ${f(s.cpuXBare.median, 2)} | ${f(s.redisUs, 1)} | ${f(s.redisScriptsPerReq, 2)} | ${f(s.rssMB, 0)} | ${f(s.othersCores, 2)} | ${s.cpuUsRounds.join(' / ')} | ${s.cpuUsProcs.join(' / ')} | ${Number.isFinite(s.cpuSpread.rel) ? `${f(100 * s.cpuSpread.rel, 0)} %` : '-'} |`,
      );
    }
    for (const s of skipped)
      log(`| ${TITLES[s.target as TargetId] ?? s.target} | skipped: ${s.reason.replace(/\|/g, '/')} |||||||||||||||`);
    if (fixed.length) {
      log(
        `\nfixed offered load (half the bare proxy's throughput of each round), paced evenly over ${o.connections} connections:`,
      );
      for (const x of fixed)
        log(
          `  round ${x.round}: ${x.rate} req/s (bare#${x.bareProc}, keygate#${x.keygateProc}): bare p50 ${f(x.bare.p50, 2)} / p99 ${f(x.bare.p99, 2)} ms, keygate p50 ${f(x.keygate.p50, 2)} / p99 ${f(x.keygate.p99, 2)} ms, added ${f(x.p99AddedMs, 2)} ms`,
        );
    }
    log(
      "\ntargets (ratios of pooled medians over processes and rounds, each round's ratio of medians in brackets; p99: median of the rounds):",
    );
    for (const t of targetsOut) {
      log(`  ${t.verdict.padEnd(7)} ${t.target}: ${f(t.value, 2)} [${t.rounds.map((v) => f(v, 2)).join(', ')}]`);
      if (t.noise) log(`          ${t.noise}`);
    }
    log(
      '\nCPU µs/req: user+system time of the process under test (/proc/<pid>/stat; nginx: master+worker; WORKERS=2: the primary and its workers; direct: the upstream) over the measured window, per response.',
    );
    log(
      "others' load: CPU the machine spent outside this run's processes during the window, in cores (of " +
        m.cpus +
        ').',
    );

    const json = JSON.stringify(
      {
        suite: 'hop',
        startedAt,
        machine: m,
        keygate: commit + dirty,
        settings: {
          rounds: o.rounds,
          processes: P,
          warmup: o.warmup,
          duration: o.duration,
          connections: o.connections,
          path: PATH,
        },
        checks,
        skipped,
        summary,
        fixed,
        sampledRounds,
        targets: targetsOut,
        rounds: Object.fromEntries(results),
      },
      null,
      1,
    );
    mkdirSync(o.resultsDir, { recursive: true });
    const file = join(o.resultsDir, `hop-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, json);
    writeFileSync(join(o.resultsDir, 'hop-latest.json'), json);
    log(`\nwritten: ${file}`);
    return { summary, targets: targetsOut, skipped };
  } finally {
    o.signal?.removeEventListener('abort', onAbort);
    await stopAll();
  }
}

/** src/ compiled as the Docker image builds it (tsconfig.build.json), migrations beside db/; returns the entry. */
function compileKeygate(log: (s: string) => void): string {
  rmSync(BUILD, { recursive: true, force: true });
  const r = spawnSync(
    process.execPath,
    [
      join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      join(ROOT, 'tsconfig.build.json'),
      '--outDir',
      BUILD,
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  const entry = join(BUILD, 'cli.js');
  if (!existsSync(entry)) throw new Error(`compiling keygate failed: ${r.stdout}${r.stderr}`);
  // Type errors elsewhere (work in progress in a shared tree) do not stop the emit; say so.
  if (r.status !== 0)
    log(`note: tsc reported type errors (emitted anyway): ${(r.stdout + r.stderr).trim().split('\n')[0]}`);
  cpSync(join(ROOT, 'src', 'db', 'migrations'), join(BUILD, 'db', 'migrations'), { recursive: true });
  return entry;
}

// ---------------------------------------------------------------- functional checks (the same for every contender)
async function check(t: Target, upstreamUrl: string, bearer: string, secret: string) {
  const ip = `192.0.2.${1 + Math.floor(Math.random() * 250)}`;
  const get = (path: string, headers: Record<string, string>, method = 'GET') =>
    fetch(t.url + path, {
      method,
      headers: { 'x-forwarded-for': ip, ...headers },
      ...(method === 'POST' ? { body: '' } : {}),
    });
  const status = async (p: Promise<Response>) => {
    const res = await p;
    await res.arrayBuffer();
    return res.status;
  };
  const id = randomBytes(6).toString('hex');
  const ok = await get(PATH, { authorization: bearer, 'x-peer-probe': id });
  await ok.arrayBuffer();
  const r: Record<string, unknown> & { target: string; ok: number; pass?: boolean } = {
    target: t.name,
    ok: ok.status,
  };
  if (!t.checks) return r;
  r.rlHeaders = [...ok.headers.keys()].filter((k) => /^x-ratelimit-/i.test(k)).length;
  r.requestId = ok.headers.has('x-request-id');
  const seen = (await (await fetch(`${upstreamUrl}/__probe/${id}`)).json()) as {
    headers: Record<string, string>;
  } | null;
  const h = seen?.headers ?? {};
  const want = createHmac('sha256', secret)
    .update(`${h['x-gateway-timestamp']}\n${h['x-request-id']}\nGET\n${PATH}\n`)
    .update(h['x-gateway-identity'] ?? '')
    .digest('hex');
  r.signed = Boolean(h['x-gateway-signature']) && want === h['x-gateway-signature'];
  r.authStripped = seen !== null && h.authorization === undefined;
  r.noKey = await status(get(PATH, {}));
  r.badKey = await status(get(PATH, { authorization: `Bearer svc_ws_${randomAlnum(40)}` }));
  r.otherWs = await status(get(PATH.replace(`/${WS}/`, `/${WS + 1}/`), { authorization: bearer }));
  r.noScope = await status(get(PATH, { authorization: bearer }, 'POST'));
  r.pass =
    r.ok === 200 &&
    r.rlHeaders === 5 &&
    r.requestId === true &&
    r.signed === true &&
    r.authStripped === true &&
    r.noKey === 401 &&
    r.badKey === 401 &&
    r.otherWs === 403 &&
    r.noScope === 403;
  return r;
}

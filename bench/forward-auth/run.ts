// The CPU one request costs the whole machine when keygate decides for nginx (issue 41), against keygate's own
// proxy and against the Kong-like peer, in one run, each in front of the same trivial upstream
// (bench/peers/upstream.mjs) and the same private redis-server:
//   nginx+decision  nginx (one worker) running deploy/forward-auth/nginx.conf itself (bench/forward-auth/
//                   nginx-conf.ts: its addresses replaced, no access log), asking keygate's decision service
//   keygate         keygate's own proxy, the same keygate process (its PORT instead of its DECISION_PORT)
//   openresty       nginx + Lua doing Kong's key-auth and rate-limiting (redis policy), the comparison kit's
//                   openresty-peer.sh from PEERS_DIR (skipped when unset or when the lua module is missing)
// Every request is GET /v2/workspaces/100/tags with one key and a client address rotated in X-Forwarded-For
// (bench/load.ts). CPU is user + system time from /proc/<pid>/stat (bench/hop.ts ticks) of EVERY process a
// request goes through, summed over the measured window: the proxy (nginx master and worker), keygate,
// redis-server and the upstream; per response. The targets take turns, the order rotated each round, and
// the ratios are taken round by round (the two windows of one round meet the same machine), then their median.
// keygate runs compiled (tsconfig.build.json into bench/.build/forward-auth, or BENCH_KEYGATE=<cli.js>), as
// `gateway` with the hop suite's seed (one organization on growth, one key) and bench/plans.json (1e9 a minute).
// Settings: BENCH_ROUNDS (3), BENCH_WARMUP (3 s), BENCH_DURATION (10 s), BENCH_CONNECTIONS (50),
// DATABASE_URL (required: a schema of its own, dropped after), PEERS_DIR, NGINX (/usr/sbin/nginx).
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test PEERS_DIR=<peers> npx tsx bench/forward-auth/run.ts
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verifyHmacHeaders, verifySignedBody } from '../../src/verifier/index.js';
import { HOP_PATH as PATH, hopSeed, ticks, tree } from '../hop.js';
import { median } from '../hop-stats.js';
import { nextIp, runLoad, type LoadResult } from '../load.js';
import { freePort, waitForPort } from '../procs.js';
import { freshSchema, runThenStop, startRedisAndUpstream, stopBeforeDrop } from '../diagnostics/stack.js';
import { writeNginxConf } from './nginx-conf.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const env = process.env;
const ROUNDS = Number(env.BENCH_ROUNDS ?? 3);
const WARMUP = Number(env.BENCH_WARMUP ?? 3);
const DURATION = Number(env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 50);
const NGINX = env.NGINX ?? '/usr/sbin/nginx';
const KEY = 'svc_ws_' + randomBytes(30).toString('hex').slice(0, 40);
const SECRET = randomBytes(32).toString('hex');
const work = mkdtempSync(join(tmpdir(), 'kg-forward-auth-'));
const procs: ChildProcess[] = [];
const byName = new Map<string, ChildProcess>();

function start(name: string, cmd: string, args: string[], e: Record<string, string>): ChildProcess {
  const out = openSync(join(work, `${name}.log`), 'a');
  const cp = spawn(cmd, args, {
    cwd: ROOT,
    env: { PATH: env.PATH ?? '', HOME: env.HOME ?? work, NODE_ENV: 'production', ...e },
    stdio: ['ignore', out, out],
  });
  procs.push(cp);
  byName.set(name, cp);
  return cp;
}

/** keygate compiled as the image runs it; a type error elsewhere in a shared tree does not stop the emit. */
function keygateEntry(): string {
  if (env.BENCH_KEYGATE) return env.BENCH_KEYGATE;
  const out = join(ROOT, 'bench', '.build', 'forward-auth');
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', out], { stdio: 'ignore' });
  if (!existsSync(join(out, 'cli.js'))) throw new Error('compiling keygate failed (run tsc -p tsconfig.build.json)');
  cpSync(join(ROOT, 'src', 'db', 'migrations'), join(out, 'db', 'migrations'), { recursive: true });
  return join(out, 'cli.js');
}

interface Target {
  id: 'nginx+decision' | 'keygate' | 'openresty';
  url: string;
  /** The processes of this path other than the shared redis-server and upstream. */
  own: () => number[];
}

/** Whether a target answers as keygate does: the key admitted with its fields and a valid identity upstream, no key refused. */
async function check(t: Target, upstreamUrl: string): Promise<string | null> {
  const probe = randomBytes(6).toString('hex');
  const ok = await fetch(t.url + PATH, {
    headers: { authorization: `Bearer ${KEY}`, 'x-forwarded-for': '192.0.2.7', 'x-peer-probe': probe },
  });
  await ok.arrayBuffer();
  if (ok.status !== 200) return `${ok.status} with the key`;
  for (const f of ['x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-ip-remaining'])
    if (!ok.headers.has(f)) return `no ${f} on the client's answer`;
  const seen = (await (await fetch(`${upstreamUrl}/__probe/${probe}`)).json()) as {
    headers: Record<string, string>;
  } | null;
  if (!seen) return 'the upstream did not see the request';
  if (seen.headers.authorization !== undefined) return 'the key reached the upstream';
  try {
    const signed = verifyHmacHeaders(SECRET, { method: 'GET', target: PATH, headers: seen.headers });
    verifySignedBody(signed, undefined, { acceptUnsignedBody: true });
  } catch (err) {
    return `the upstream's identity does not verify: ${(err as Error).message}`;
  }
  const none = await fetch(t.url + PATH, { headers: { 'x-forwarded-for': '192.0.2.8' } });
  await none.arrayBuffer();
  return none.status === 401 ? null : `${none.status} without a key`;
}

interface Window {
  round: number;
  target: string;
  rps: number;
  p99: number;
  non2xx: number;
  /** CPU µs per response: every process of the path, and each part. */
  us: { all: number; proxy: number; keygate: number; redis: number; upstream: number };
}

async function main() {
  const databaseUrl = env.BENCH_DATABASE_URL ?? env.DATABASE_URL;
  if (!databaseUrl) throw new Error('set DATABASE_URL (keygate reads its key from PostgreSQL)');
  if (!existsSync(NGINX)) throw new Error(`nginx is not at ${NGINX} (apt-get install -y nginx; or set NGINX)`);
  const entry = keygateEntry();
  const { redisPort, upstreamPort } = await startRedisAndUpstream(start);
  const [redisPid, upstreamPid] = [byName.get('redis')!.pid!, byName.get('upstream')!.pid!];
  const UPSTREAM_URL = `http://127.0.0.1:${upstreamPort}`;
  const REDIS_URL = `redis://127.0.0.1:${redisPort}`;
  const { url: dbUrl, drop } = await freshSchema(databaseUrl, 'fa');
  const seed = join(work, 'seed.json');
  writeFileSync(seed, JSON.stringify(hopSeed(KEY)));

  // keygate: its own proxy on PORT, the decision service on DECISION_PORT, one process for both targets.
  const [port, decisionPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const kg = start('keygate', process.execPath, [entry, 'gateway'], {
    PORT: String(port),
    DECISION_PORT: String(decisionPort),
    DECISION_HOST: '127.0.0.1',
    ADMIN_PORT: String(adminPort),
    HOST: '127.0.0.1',
    UPSTREAM_URL,
    REDIS_URL,
    DATABASE_URL: dbUrl.toString(),
    GATEWAY_SECRET: SECRET,
    TRUST_PROXY: '127.0.0.1,::1',
    PLANS_FILE: join(ROOT, 'bench', 'plans.json'),
    SEED_FILE: seed,
    ACCESS_LOG: 'off',
  });
  await Promise.all([waitForPort(port, 90_000), waitForPort(decisionPort, 90_000)]).catch((err: Error) => {
    throw new Error(`keygate did not start (log: ${join(work, 'keygate.log')}): ${err.message}`);
  });
  const kgPid = kg.pid!;

  // nginx with deploy/forward-auth/nginx.conf: one worker, as the openresty peer; both decision entries of
  // its upstream block on the one keygate process.
  const nginxDir = join(work, 'nginx');
  mkdirSync(nginxDir);
  chmodSync(work, 0o755); // a root master's workers (nobody) reach their temporary paths
  const nginxPort = await freePort();
  const ng = start(
    'nginx',
    NGINX,
    writeNginxConf(nginxDir, {
      listen: nginxPort,
      decision: [decisionPort, decisionPort],
      app: upstreamPort,
      workers: 1,
      accessLog: false,
    }),
    {},
  );
  await waitForPort(nginxPort, 10_000);

  const targets: Target[] = [
    { id: 'nginx+decision', url: `http://127.0.0.1:${nginxPort}`, own: () => tree(ng.pid!) },
    { id: 'keygate', url: `http://127.0.0.1:${port}`, own: () => [] },
  ];

  // The Kong-like peer, from the comparison kit (openresty-peer.sh writes its nginx.conf and execs nginx).
  const peers = env.PEERS_DIR;
  const launcher = peers ? join(peers, 'openresty-peer.sh') : '';
  if (!peers || !existsSync(launcher)) console.log('openresty: skipped (set PEERS_DIR to the comparison kit)');
  else {
    const orPort = await freePort();
    const orEnv = {
      PORT: String(orPort),
      HOST: '127.0.0.1',
      UPSTREAM_URL,
      REDIS_URL,
      API_KEY: KEY,
      WORKSPACE_ID: '100',
      GATEWAY_SECRET: SECRET,
      RATE_LIMIT: '1000000000',
      NGINX,
      OPENRESTY_DIR: join(work, 'openresty'),
    };
    const probe = spawnSync('bash', [launcher, '--check'], { env: { ...env, ...orEnv }, encoding: 'utf8' });
    if (probe.status !== 0) console.log(`openresty: skipped (${probe.stderr.trim().split('\n')[0]})`);
    else {
      const or = start('openresty', 'bash', [launcher], orEnv);
      await waitForPort(orPort, 10_000);
      targets.push({ id: 'openresty', url: `http://127.0.0.1:${orPort}`, own: () => tree(or.pid!) });
    }
  }

  for (const t of targets) {
    const why = await check(t, UPSTREAM_URL);
    if (why) throw new Error(`${t.id} does not answer as keygate does: ${why}`);
  }
  const headers = () => ({ authorization: `Bearer ${KEY}`, 'x-forwarded-for': nextIp() });
  const load = (t: Target, duration: number) =>
    runLoad([{ url: t.url, path: PATH, connections: CONNECTIONS, duration, headers }]);
  for (const t of targets) {
    const r = await load(t, WARMUP);
    console.log(`warm-up ${t.id}: ${Math.round(r.rps)} req/s ${JSON.stringify(r.statuses)}`);
  }

  const windows: Window[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // Rotated: each target goes first in some round, after a short warm-up of its own.
    const order = targets.map((_, i) => targets[(i + round - 1) % targets.length]);
    for (const t of order) {
      await load(t, 1);
      const parts = {
        proxy: t.own(),
        keygate: t.id === 'openresty' ? [] : [kgPid],
        redis: [redisPid],
        upstream: [upstreamPid],
      };
      const before = Object.fromEntries(Object.entries(parts).map(([k, pids]) => [k, ticks(pids)]));
      const r: LoadResult = await load(t, DURATION);
      const us = Object.fromEntries(
        Object.entries(parts).map(([k, pids]) => [k, ((ticks(pids) - before[k]) * 10_000) / r.requests]),
      ) as Omit<Window['us'], 'all'>;
      const w: Window = {
        round,
        target: t.id,
        rps: r.rps,
        p99: r.p99,
        non2xx: r.non2xx + r.errors,
        us: { all: us.proxy + us.keygate + us.redis + us.upstream, ...us },
      };
      windows.push(w);
      const part = (k: keyof Window['us']) => `${k} ${w.us[k].toFixed(0)}`;
      console.log(
        `round ${round} ${t.id.padEnd(15)} ${Math.round(r.rps)} req/s  p99 ${r.p99.toFixed(1)} ms  non-2xx ${w.non2xx}  CPU µs/req: ${['all', 'proxy', 'keygate', 'redis', 'upstream'].map((k) => part(k as keyof Window['us'])).join(', ')}`,
      );
    }
  }

  const of = (id: string) => windows.filter((w) => w.target === id);
  console.log('\nCPU µs per request, every process of the path (median of rounds), and ratios taken round by round:');
  for (const t of targets) {
    const ws = of(t.id);
    const line = (k: keyof Window['us']) => `${k} ${median(ws.map((w) => w.us[k])).toFixed(0)}`;
    console.log(
      `${t.id.padEnd(15)} ${Math.round(median(ws.map((w) => w.rps)))} req/s  ${['all', 'proxy', 'keygate', 'redis', 'upstream'].map((k) => line(k as keyof Window['us'])).join(', ')}`,
    );
  }
  const ratios: Record<string, number[]> = {};
  for (const [a, b] of [
    ['nginx+decision', 'keygate'],
    ['nginx+decision', 'openresty'],
    ['keygate', 'openresty'],
  ] as const) {
    if (of(a).length === 0 || of(b).length === 0) continue;
    const r = of(a).map((w, i) => w.us.all / of(b)[i].us.all);
    ratios[`${a} / ${b}`] = r;
    console.log(`${a} / ${b}: ${median(r).toFixed(2)} [${r.map((x) => x.toFixed(2)).join(', ')}]`);
  }
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `forward-auth-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({ commit, rounds: ROUNDS, duration: DURATION, connections: CONNECTIONS, windows, ratios }, null, 2),
  );
  console.log(`\ncommit ${commit}; every window in ${file}; logs in ${work}`);
  await stopBeforeDrop(procs);
  await drop();
}

runThenStop(main, procs);

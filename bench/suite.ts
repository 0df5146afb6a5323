// The benchmark suite (bench/README.md): starts everything on loopback, runs each scenario for a bounded time
// after a warm-up, stops everything it started, and returns the measurements and the targets.
import { mkdirSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, cpus, totalmem, platform, release } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { encodeIdentity, sign, type Identity } from '../src/http/identity.js';
import {
  compileForBench,
  startChild,
  spawnProgram,
  freePort,
  waitForPort,
  which,
  type Child,
  type Spawned,
} from './procs.js';
import { memory, type ChildConfig } from './protocol.js';
import { runLoad, runPaced, nextIp, type LoadResult, type LoadSpec } from './load.js';
import {
  benchSeed,
  manyKeys,
  ONE_KEY,
  LIMITED_KEY,
  WS,
  LIMITED_WS,
  ACCOUNT,
  KEY_ID,
  ORG,
  ALL_READ_SCOPES,
} from './seed.js';
import { summarise, type ProfileSummary } from './profile.js';

export const SCENARIOS = [
  'direct',
  'bare-proxy',
  'gateway',
  'gateway-many-keys',
  'gateway-rejections',
  'gateway-2-processes',
  'nginx',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export interface SuiteOptions {
  /** Measured seconds per scenario. */
  duration: number;
  /** Warm-up seconds per scenario (not measured). */
  warmup: number;
  /** Each scenario runs this many times, interleaved; the median round by throughput is reported. */
  rounds: number;
  connections: number;
  /** Distinct keys of scenario 4. */
  manyKeys: number;
  /** Run only these (the baseline runs whenever a ratio needs it). */
  only?: ScenarioName[];
  /** CPU-profile the gateway during each gateway scenario's measured window. */
  profile?: boolean;
  /** PostgreSQL for the backend and gateways (a schema of its own, dropped after); absent: PGlite in each process. */
  databaseUrl?: string;
  /** An existing Redis (a prefix of its own, cleaned after); absent: a private redis-server when one is on PATH. */
  redisUrl?: string;
  /** Used when redisUrl is absent and no redis-server is on PATH (e.g. CI's REDIS_URL). */
  fallbackRedisUrl?: string;
  /** Requests of the sequential round-trip probe after each gateway scenario (500). */
  probe?: number;
  /** A route to load, e.g. /v2/workspaces/{wid}/tags; absent: the cheapest 2xx candidate, measured. */
  path?: string;
  resultsDir: string;
  log?: (line: string) => void;
  /** Aborting stops everything started so far (run.ts aborts on SIGINT/SIGTERM), then the run rejects. */
  signal?: AbortSignal;
}

export interface ScenarioResult extends LoadResult {
  name: ScenarioName;
  title: string;
  target: string;
  connections: number;
  /** Every round's throughput and latency (the fields above are the median round's; errors and non2xx are summed). */
  rounds: { rps: number; p50: number; p99: number; errors: number; non2xx: number }[];
  /** Redis round trips per request: writes on the gateways' Redis sockets over the requests the gateways answered (null without a gateway). */
  redisRoundTrips: number | null;
  /** Redis commands per request from INFO commandstats (commands run inside scripts included). */
  redisCommands: number | null;
  redisCommandBreakdown: Record<string, number> | null;
  gatewayRssMB: number | null;
  /** VmHWM of gateway 1 after the scenario (first round): the highest RSS it has had since it started. */
  gatewayPeakRssMB: number | null;
  gatewayHeapUsedMB: number | null;
  /** CPU time (user + system) of the process in the middle per request of the measured window, in µs. */
  hopCpuMicrosPerRequest: number | null;
  /** CPU time redis-server spent per request in the measured window (gateway scenarios). */
  redisCpuMicrosPerRequest: number | null;
  /** Store calls the gateways answered without Redis (circuit breaker open) during the measured run and probe. */
  degradedCalls: number | null;
  profile?: { file: string; summary: ProfileSummary };
  skipped?: string;
}

export interface Target {
  name: string;
  goal: string;
  measured: number | null;
  display: string;
  pass: boolean | null;
  /** For the comparisons of two scenarios: the value of each round (`measured` is their median). */
  perRound?: number[];
}

export interface SuiteResult {
  startedAt: string;
  command: string;
  machine: { cpus: number; cpuModel: string; memoryGB: number; os: string; node: string };
  settings: {
    duration: number;
    warmup: number;
    rounds: number;
    connections: number;
    manyKeys: number;
    path: string;
    database: string;
    redis: string;
    gatewayIdleRssMB: number;
  };
  scenarios: ScenarioResult[];
  targets: Target[];
  /**
   * Latency added at the same offered load, below saturation: the bare proxy and the gateway (one key)
   * each loaded at half the bare proxy's saturated throughput. Informative; the p99 target is taken
   * at saturation (scenarios 2 and 3).
   */
  fixedRate: FixedRate | null;
}

export interface FixedRate {
  rate: number;
  bare: { rps: number; p50: number; p99: number };
  gateway: { rps: number; p50: number; p99: number };
}

const TITLES: Record<ScenarioName, string> = {
  direct: '1. direct (backend)',
  'bare-proxy': '2. bare proxy (baseline)',
  gateway: '3. gateway, one key',
  'gateway-many-keys': '4. gateway, many keys',
  'gateway-rejections': '5. gateway, rejections (429)',
  'gateway-2-processes': '6. gateway, 2 processes',
  nginx: '7. nginx',
};

/** Routes every candidate of which the backend may implement; the cheapest that answers 2xx is loaded. */
/** Requests of the sequential round-trip probe after each gateway scenario. */
const PROBE = 500;

const CANDIDATES = [
  '/v2/workspaces/{wid}/billing/capabilities',
  '/v2/workspaces/{wid}/billing/plan',
  '/v2/workspaces/{wid}/tags',
  '/v2/workspaces/{wid}',
  '/v2/workspaces/{wid}/accounts/{account}',
  '/v2/workspaces/{wid}/accounts',
];

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export async function runSuite(o: SuiteOptions): Promise<SuiteResult> {
  const log = o.log ?? ((l: string) => process.stdout.write(l + '\n'));
  const want = (n: ScenarioName) => !o.only || o.only.includes(n);
  const runId = randomBytes(4).toString('hex');
  const work = mkdtempSync(join(tmpdir(), 'keygate-bench-'));
  const logDir = join(o.resultsDir, 'logs');
  const profDir = join(o.resultsDir, 'profiles');
  mkdirSync(logDir, { recursive: true });
  if (o.profile) mkdirSync(profDir, { recursive: true });
  const stopList: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const s of stopList.splice(0).reverse()) await s().catch((err) => log(`cleanup: ${(err as Error).message}`));
  };
  const onAbort = () => void stopAll().then(() => rmSync(work, { recursive: true, force: true }));
  o.signal?.addEventListener('abort', onAbort, { once: true });

  try {
    compileForBench();
    // ---- Redis: a private server when possible, so INFO commandstats counts the gateway alone.
    let redisUrl = o.redisUrl;
    let redisLabel: string;
    const prefix = `bench${runId}:`;
    const bin = redisUrl ? null : await which('redis-server');
    if (!redisUrl && !bin && o.fallbackRedisUrl) redisUrl = o.fallbackRedisUrl;
    const sharedRedis = redisUrl !== undefined;
    if (!redisUrl) {
      if (!bin)
        throw new Error(
          'no Redis: install redis-server or set BENCH_REDIS_URL (the gateways share their counters through Redis)',
        );
      const port = await freePort();
      const rs: Spawned = spawnProgram(
        bin,
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        join(logDir, 'redis.log'),
      );
      stopList.push(() => rs.stop());
      await waitForPort(port, 10_000);
      redisUrl = `redis://127.0.0.1:${port}`;
      redisLabel = `private redis-server on port ${port}`;
    } else {
      redisLabel = `${redisUrl.replace(/\/\/([^@/:]*):[^@/]*@/, '//$1:***@')} (prefix ${prefix}; INFO commandstats counts every client of it)`;
    }
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    redis.on('error', () => {});
    stopList.push(async () => {
      // Clean the bench's keys on a shared Redis; a private one simply stops.
      if (sharedRedis) {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length) await redis.del(...keys);
        } while (cursor !== '0');
      }
      redis.disconnect();
    });

    // ---- Database: a schema of its own on PostgreSQL, or PGlite in each process.
    const schema = `bench_${runId}`;
    if (o.databaseUrl) {
      stopList.push(async () => {
        const c = new pg.Client({ connectionString: o.databaseUrl });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
      });
    }
    const dbLabel = o.databaseUrl
      ? `PostgreSQL ${o.databaseUrl.replace(/\/\/([^@/:]*):[^@/]*@/, '//$1:***@')}, schema ${schema}`
      : 'PGlite in memory in each process';

    // ---- Seed, secrets, plans.
    const seedFile = join(work, 'seed.json');
    writeFileSync(seedFile, JSON.stringify(benchSeed(o.manyKeys)));
    const gatewaySecret = randomBytes(32).toString('hex');
    const base = {
      databaseUrl: o.databaseUrl,
      schema: o.databaseUrl ? schema : undefined,
      redisUrl,
      redisPrefix: prefix,
      gatewaySecret,
      internalToken: randomBytes(24).toString('hex'),
      plansFile: join(ROOT, 'bench/plans.json'),
    };
    const child = async (cfg: Omit<ChildConfig, keyof typeof base | 'logFile'>): Promise<Child> => {
      const c = await startChild({ ...base, ...cfg, logFile: join(logDir, `${cfg.name}.log`) });
      stopList.push(() => c.stop());
      return c;
    };

    log(
      `starting: backend (seeding ${o.manyKeys + 2} keys), bare proxy, gateway; Redis: ${redisLabel}; database: ${dbLabel}`,
    );
    const backend = await child({ role: 'backend', name: 'backend', seedFile });
    const gatewaySeed = o.databaseUrl ? undefined : seedFile;
    const [bare, gw1] = await Promise.all([
      child({ role: 'bare', name: 'bare-proxy', upstream: backend.url }),
      child({ role: 'gateway', name: 'gateway-1', upstream: backend.url, seedFile: gatewaySeed }),
    ]);

    // ---- The route: the cheapest candidate the backend answers with 2xx.
    const identityFor = (wid: number): Identity => ({
      keyId: KEY_ID,
      keyType: 'workspace',
      organizationId: ORG,
      userId: null,
      workspaceId: wid,
      role: 'ADMIN',
      scopes: ALL_READ_SCOPES,
      plan: 'growth',
    });
    const signer = (path: string) => {
      const identity = encodeIdentity(identityFor(WS));
      let sent = 0;
      // A fresh signature per request: the backend accepts each signature once (replays are refused).
      return () => {
        const ts = String(Date.now());
        const rid = `bench-${ts}-${sent++}`;
        return {
          'x-request-id': rid,
          'x-gateway-identity': identity,
          'x-gateway-timestamp': ts,
          'x-gateway-signature': sign(gatewaySecret, ts, rid, 'GET', path, identity),
          'x-forwarded-for': nextIp(),
        };
      };
    };
    const fill = (p: string, wid: number) => p.replace('{wid}', String(wid)).replace('{account}', String(ACCOUNT));
    const path = await chooseRoute(
      o.path ? [o.path] : CANDIDATES,
      backend.url,
      (p) => signer(fill(p, WS)),
      (p) => fill(p, WS),
      log,
    );
    const pattern = o.path ?? CANDIDATES.find((c) => fill(c, WS) === path)!;
    const limitedPath = fill(pattern, LIMITED_WS);
    const gwCheck = await fetch(gw1.url + path, {
      headers: { authorization: `Bearer ${ONE_KEY}`, 'x-forwarded-for': nextIp() },
    });
    if (!gwCheck.ok)
      throw new Error(`GET ${path} through the gateway answers ${gwCheck.status}: ${await gwCheck.text()}`);
    log(`route: GET ${path}`);

    // ---- Header generators (every scenario builds a fresh headers object per request: the same generator cost).
    const bearerOne = `Bearer ${ONE_KEY}`;
    const bearerLimited = `Bearer ${LIMITED_KEY}`;
    const bearers = manyKeys(o.manyKeys).map((k) => `Bearer ${k}`);
    let keyIndex = 0;
    const headers = {
      signed: signer(path),
      one: () => ({ authorization: bearerOne, 'x-forwarded-for': nextIp() }),
      many: () => ({ authorization: bearers[keyIndex++ % bearers.length], 'x-forwarded-for': nextIp() }),
      limited: () => ({ authorization: bearerLimited, 'x-forwarded-for': nextIp() }),
    };

    const stats = async (gws: Child[]) => {
      const info = parseCommandStats(await redis.info('commandstats'));
      let writes = 0;
      let requests = 0;
      let degraded = 0;
      for (const g of gws) {
        const st = await g.ask({ cmd: 'stats' }, 'stats');
        writes += st.redisWrites;
        requests += st.requests;
        degraded += st.degradedCalls;
      }
      return { info, writes, requests, degraded };
    };
    const idle = memory(gw1.pid);
    const c = o.connections;

    // ---- The scenarios, in order; each round runs every one of them once (rounds interleave them, so a
    // burst of noise on a shared machine lands on one round of each rather than on one scenario).
    interface Plan {
      name: ScenarioName;
      target: string;
      specs: (duration: number) => LoadSpec[];
      gws: Child[];
      /** The process in the middle (bare proxy or gateways), whose CPU time per request is measured. */
      hop?: Child[];
      warm?: () => Promise<unknown>;
    }
    const plans: Plan[] = [];
    const single =
      (url: string, p: string, h: () => Record<string, string>) =>
      (d: number): LoadSpec[] => [{ url, path: p, connections: c, duration: d, headers: h }];
    if (want('direct'))
      plans.push({
        name: 'direct',
        target: `${backend.url}${path}`,
        specs: single(backend.url, path, headers.signed),
        gws: [],
      });
    plans.push({
      name: 'bare-proxy',
      target: `${bare.url}${path}`,
      specs: single(bare.url, path, headers.signed),
      gws: [],
      hop: [bare],
    });
    if (want('gateway') || want('gateway-2-processes') || want('gateway-rejections') || want('gateway-many-keys')) {
      plans.push({
        name: 'gateway',
        target: `${gw1.url}${path}`,
        specs: single(gw1.url, path, headers.one),
        gws: [gw1],
      });
    }
    if (want('gateway-many-keys')) {
      plans.push({
        name: 'gateway-many-keys',
        target: `${gw1.url}${path} with ${o.manyKeys} keys`,
        specs: single(gw1.url, path, headers.many),
        gws: [gw1],
        // Every key once first, so the measured window sees the steady state (principals cached).
        warm: () => runLoad([{ url: gw1.url, path, connections: c, amount: o.manyKeys, headers: headers.many }]),
      });
    }
    if (want('gateway-rejections')) {
      plans.push({
        name: 'gateway-rejections',
        target: `${gw1.url}${limitedPath} (key over its limit)`,
        specs: single(gw1.url, limitedPath, headers.limited),
        gws: [gw1],
      });
    }
    if (want('gateway-2-processes')) {
      const gw2 = await child({ role: 'gateway', name: 'gateway-2', upstream: backend.url, seedFile: gatewaySeed });
      plans.push({
        name: 'gateway-2-processes',
        target: `${gw1.url} + ${gw2.url}, ${Math.ceil(c / 2)} + ${Math.floor(c / 2)} connections`,
        specs: (d) => [
          { url: gw1.url, path, connections: Math.ceil(c / 2), duration: d, headers: headers.one },
          { url: gw2.url, path, connections: Math.floor(c / 2), duration: d, headers: headers.one },
        ],
        gws: [gw1, gw2],
      });
    }
    const skips: ScenarioResult[] = [];
    if (want('nginx')) {
      const nginx = await which('nginx');
      if (!nginx) {
        skips.push(skipped('nginx', 'nginx is not on this machine'));
      } else {
        const port = await freePort();
        const conf = nginxConf(work, port, backend.url);
        const ng = spawnProgram(nginx, ['-p', work, '-c', conf, '-g', 'daemon off;'], join(logDir, 'nginx.log'));
        stopList.push(() => ng.stop());
        await waitForPort(port, 10_000);
        const url = `http://127.0.0.1:${port}`;
        plans.push({ name: 'nginx', target: `${url}${path}`, specs: single(url, path, headers.signed), gws: [] });
      }
    }

    const measure = async (p: Plan, roundNo: number): Promise<ScenarioResult> => {
      log(
        `${TITLES[p.name]}${o.rounds > 1 ? ` [round ${roundNo + 1}/${o.rounds}]` : ''}: warm-up ${o.warmup} s, then ${o.duration} s at ${c} connections`,
      );
      await p.warm?.();
      await runLoad(p.specs(o.warmup));
      const beforeRun = p.gws.length ? await stats(p.gws) : null;
      // CPU time of the hop per request: far steadier on a noisy machine than the throughput.
      const hop = p.hop ?? p.gws;
      // The profiled process: the first gateway, or the bare proxy (a baseline profile to compare with).
      const profiling = o.profile && hop.length > 0 && roundNo === 0;
      if (profiling) await hop[0].ask({ cmd: 'profile-start' }, 'profile-started');
      const cpu = async () =>
        (await Promise.all(hop.map((h) => h.ask({ cmd: 'stats' }, 'stats')))).reduce((a, st) => a + st.cpuMicros, 0);
      const cpuBefore = hop.length ? await cpu() : 0;
      const redisCpu = async () => parseRedisCpuMicros(await redis.info('cpu'));
      const redisCpuBefore = p.gws.length ? await redisCpu() : 0;
      const r = await runLoad(p.specs(o.duration));
      const hopCpuMicros = hop.length && r.requests > 0 ? round((await cpu()) - cpuBefore, 0) / r.requests : null;
      const redisCpuMicros = p.gws.length && r.requests > 0 ? ((await redisCpu()) - redisCpuBefore) / r.requests : null;
      let profile: ScenarioResult['profile'];
      if (profiling) {
        const file = join(profDir, `${p.name}.cpuprofile`);
        await hop[0].ask({ cmd: 'profile-stop', file }, 'profiled');
        profile = { file, summary: summarise(file) };
      }
      // Round trips per request: a fixed number of requests, one connection per gateway, each finished,
      // so no request is in flight at either reading (autocannon drops those when a timed run ends).
      let rt: { writes: number; served: number; cmds: Record<string, number>; degraded: number } | null = null;
      if (p.gws.length) {
        const before = await stats(p.gws);
        const probe = p
          .specs(1)
          .map((sp) => ({ ...sp, duration: undefined, amount: o.probe ?? PROBE, connections: 1 }));
        await runLoad(probe);
        const after = await stats(p.gws);
        const served = Math.max(1, after.requests - before.requests);
        const cmds: Record<string, number> = {};
        for (const [k, v] of Object.entries(after.info)) {
          const d = v - (before.info[k] ?? 0);
          if (d > 0 && k !== 'info') cmds[k] = round3(d / served);
        }
        rt = { writes: after.writes - before.writes, served, cmds, degraded: after.degraded - beforeRun!.degraded };
      }
      const mem = p.gws.length ? memory(p.gws[0].pid) : null;
      const heap = p.gws.length ? (await p.gws[0].ask({ cmd: 'stats' }, 'stats')).heapUsedBytes : null;
      const res: ScenarioResult = {
        ...r,
        name: p.name,
        title: TITLES[p.name],
        target: p.target,
        connections: c,
        rounds: [],
        redisRoundTrips: rt ? round3(rt.writes / rt.served) : null,
        redisCommands: rt ? round3(Object.values(rt.cmds).reduce((a, b) => a + b, 0)) : null,
        redisCommandBreakdown: rt?.cmds ?? null,
        degradedCalls: rt?.degraded ?? null,
        gatewayRssMB: mem ? round(mem.rss / 2 ** 20, 1) : null,
        gatewayPeakRssMB: mem ? round(mem.peak / 2 ** 20, 1) : null,
        gatewayHeapUsedMB: heap === null ? null : round(heap / 2 ** 20, 1),
        hopCpuMicrosPerRequest: hopCpuMicros === null ? null : round(hopCpuMicros, 1),
        redisCpuMicrosPerRequest: redisCpuMicros === null ? null : round(redisCpuMicros, 1),
        profile,
      };
      log(
        `  ${fmt(res.rps, 0)} req/s, p50 ${fmt(res.p50, 2)} ms, p99 ${fmt(res.p99, 2)} ms, errors ${res.errors}, non-2xx ${res.non2xx}` +
          (res.hopCpuMicrosPerRequest !== null ? `, hop CPU ${res.hopCpuMicrosPerRequest} µs/req` : '') +
          (res.redisCpuMicrosPerRequest !== null ? `, redis CPU ${res.redisCpuMicrosPerRequest} µs/req` : '') +
          (res.redisRoundTrips !== null ? `, redis ${res.redisRoundTrips} rt/req` : '') +
          (res.degradedCalls ? `, ${res.degradedCalls} store calls without Redis (breaker open)` : ''),
      );
      return res;
    };

    const all = new Map<ScenarioName, ScenarioResult[]>();
    for (let n = 0; n < o.rounds; n++) {
      for (const p of plans) {
        const r = await measure(p, n);
        all.set(p.name, [...(all.get(p.name) ?? []), r]);
      }
    }
    const results: ScenarioResult[] = [];
    for (const name of SCENARIOS) {
      const rs = all.get(name);
      if (!rs) {
        const s = skips.find((x) => x.name === name);
        if (s) results.push(s);
        continue;
      }
      // The median round by throughput represents the scenario; every round is kept.
      const sorted = [...rs].sort((a, b) => a.rps - b.rps);
      const median = sorted[Math.floor((sorted.length - 1) / 2)];
      const rounds = rs.map((r) => ({
        rps: round(r.rps, 1),
        p50: round3(r.p50),
        p99: round3(r.p99),
        errors: r.errors,
        non2xx: r.non2xx,
      }));
      results.push({
        ...median,
        rounds,
        errors: rs.reduce((n, r) => n + r.errors, 0),
        degradedCalls: rs.some((r) => r.degradedCalls !== null)
          ? rs.reduce((n, r) => n + (r.degradedCalls ?? 0), 0)
          : null,
        non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
        profile: rs.find((r) => r.profile)?.profile,
        // Peak RSS is a high-water mark over the process's life: the first round's reading is the one
        // taken before any later scenario ran (for many keys: after scenarios 1 to 4 only).
        gatewayPeakRssMB: rs[0].gatewayPeakRssMB,
      });
    }

    let fixedRate: FixedRate | null = null;
    const bareRes = results.find((r) => r.name === 'bare-proxy' && !r.skipped);
    const bareP = plans.find((p) => p.name === 'bare-proxy');
    const gwP = plans.find((p) => p.name === 'gateway');
    if (bareRes && bareP && gwP && bareRes.rps > 0) {
      const rate = Math.max(100, Math.round(bareRes.rps / 2 / 100) * 100);
      const at = async (p: Plan) => {
        log(`${TITLES[p.name]} at a fixed ${rate} req/s, evenly paced: ${o.duration} s at ${c} connections`);
        // One target each; runPaced spaces the requests evenly (autocannon's overallRate comes in bursts).
        const [sp] = p.specs(o.duration);
        const r = await runPaced({
          url: sp.url,
          path: sp.path,
          connections: sp.connections,
          duration: o.duration,
          rate,
          headers: sp.headers,
        });
        log(`  ${fmt(r.rps, 0)} req/s, p50 ${fmt(r.p50, 2)} ms, p99 ${fmt(r.p99, 2)} ms, errors ${r.errors}`);
        return { rps: round(r.rps, 1), p50: round3(r.p50), p99: round3(r.p99) };
      };
      fixedRate = { rate, bare: await at(bareP), gateway: await at(gwP) };
    }

    return {
      fixedRate,
      startedAt: new Date().toISOString(),
      command: '',
      machine: machine(),
      settings: {
        duration: o.duration,
        warmup: o.warmup,
        rounds: o.rounds,
        connections: o.connections,
        manyKeys: o.manyKeys,
        path,
        database: dbLabel,
        redis: redisLabel,
        gatewayIdleRssMB: round(idle.rss / 2 ** 20, 1),
      },
      scenarios: results,
      targets: targets(results),
    };
  } finally {
    o.signal?.removeEventListener('abort', onAbort);
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

function skipped(name: ScenarioName, why: string): ScenarioResult {
  return {
    name,
    title: TITLES[name],
    target: '',
    connections: 0,
    rounds: [],
    requests: 0,
    seconds: 0,
    rps: 0,
    p50: 0,
    p90: 0,
    p99: 0,
    mean: 0,
    errors: 0,
    non2xx: 0,
    statuses: {},
    redisRoundTrips: null,
    redisCommands: null,
    redisCommandBreakdown: null,
    gatewayRssMB: null,
    gatewayPeakRssMB: null,
    gatewayHeapUsedMB: null,
    hopCpuMicrosPerRequest: null,
    redisCpuMicrosPerRequest: null,
    degradedCalls: null,
    skipped: why,
  };
}

/** Probe each candidate straight at the backend; of those answering 2xx, the lowest mean latency wins. */
async function chooseRoute(
  candidates: string[],
  backendUrl: string,
  headersFor: (pattern: string) => () => Record<string, string>,
  fill: (pattern: string) => string,
  log: (l: string) => void,
): Promise<string> {
  const timings: { path: string; ms: number }[] = [];
  const refused: string[] = [];
  for (const pattern of candidates) {
    const path = fill(pattern);
    const h = headersFor(pattern);
    const first = await fetch(backendUrl + path, { headers: h() });
    await first.arrayBuffer();
    if (!first.ok) {
      refused.push(`${path} ${first.status}`);
      continue;
    }
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) await (await fetch(backendUrl + path, { headers: h() })).arrayBuffer();
    timings.push({ path, ms: (performance.now() - t0) / 200 });
  }
  if (!timings.length)
    throw new Error(`no candidate route answers 2xx at the backend: ${refused.join(', ')} (set BENCH_PATH)`);
  timings.sort((a, b) => a.ms - b.ms);
  log(
    `route candidates (mean ms, sequential): ${timings.map((t) => `${t.path} ${t.ms.toFixed(2)}`).join('; ')}${refused.length ? `; not 2xx: ${refused.join(', ')}` : ''}`,
  );
  return timings[0].path;
}

/** used_cpu_sys + used_cpu_user of `INFO cpu`, in microseconds. */
export function parseRedisCpuMicros(info: string): number {
  let total = 0;
  for (const m of info.matchAll(/^used_cpu_(?:sys|user):([\d.]+)\r?$/gm)) total += Number(m[1]) * 1e6;
  return total;
}

export function parseCommandStats(info: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of info.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

export function nginxConf(dir: string, port: number, upstream: string): string {
  const file = join(dir, 'nginx.conf');
  const u = new URL(upstream);
  writeFileSync(
    file,
    `worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'nginx-error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  # Keep-alive on both sides for the whole run, as the proxies under test do (nginx closes a connection
  # after 1,000 requests by default, which the load generator counts as an error).
  keepalive_requests 1000000;
  keepalive_timeout 65s;
  upstream backend { server ${u.hostname}:${u.port}; keepalive 64; keepalive_requests 1000000; keepalive_timeout 65s; }
  server {
    listen 127.0.0.1:${port};
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
`,
  );
  return file;
}

export function machine(): SuiteResult['machine'] {
  const c = cpus();
  return {
    cpus: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memoryGB: round(totalmem() / 2 ** 30, 1),
    os: `${platform()} ${release()}`,
    node: process.version,
  };
}

const round = (v: number, d: number) => Math.round(v * 10 ** d) / 10 ** d;
const round3 = (v: number) => round(v, 3);
export const fmt = (v: number, d: number) => v.toFixed(d);

/** The targets of bench/README.md, each with what was measured (null when a scenario it needs did not run). */
export function targets(rs: ScenarioResult[]): Target[] {
  const get = (n: ScenarioName) => rs.find((r) => r.name === n && !r.skipped);
  const bare = get('bare-proxy');
  const one = get('gateway');
  const many = get('gateway-many-keys');
  const rej = get('gateway-rejections');
  const two = get('gateway-2-processes');
  const t: Target[] = [];
  // Two scenarios are compared round by round (rounds interleave the scenarios, so the two runs of one
  // round are minutes apart and meet the same machine), and the median of those values is the measure.
  // Pairing the median round of one scenario with the median round of another would mix rounds.
  const paired = (
    a: ScenarioResult,
    b: ScenarioResult,
    f: (x: ScenarioResult['rounds'][number], y: ScenarioResult['rounds'][number]) => number | null,
  ) => {
    const n = Math.min(a.rounds.length, b.rounds.length);
    const vs = n === 0 ? [f(a, b)] : Array.from({ length: n }, (_, i) => f(a.rounds[i], b.rounds[i]));
    const ok = vs.filter((v): v is number => v !== null);
    return ok.length === vs.length && ok.length > 0 ? ok : null;
  };
  const median = (vs: number[]) => {
    const s = [...vs].sort((x, y) => x - y);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const rounds = (vs: number[], d: number) =>
    vs.length > 1 ? ` (rounds ${vs.map((v) => v.toFixed(d)).join(', ')})` : '';
  const ratio = (name: string, goal: number, a?: ScenarioResult, b?: ScenarioResult) => {
    const vs = a && b ? paired(a, b, (x, y) => (y.rps > 0 ? x.rps / y.rps : null)) : null;
    const v = vs ? median(vs) : null;
    t.push({
      name,
      goal: `>= ${goal}`,
      measured: v === null ? null : round(v, 3),
      display: v === null ? 'not run' : v.toFixed(2) + rounds(vs!, 2),
      pass: v === null ? null : v >= goal,
      ...(vs && vs.length > 1 ? { perRound: vs.map((x) => round(x, 3)) } : {}),
    });
  };
  ratio('gateway / bare proxy throughput', 0.85, one, bare);
  const dps = one && bare ? paired(one, bare, (x, y) => x.p99 - y.p99) : null;
  const dp = dps ? median(dps) : null;
  t.push({
    name: `gateway p99 - bare proxy p99 (${one?.connections ?? 50} connections)`,
    goal: '<= 1.5 ms',
    measured: dp === null ? null : round(dp, 3),
    display: dp === null ? 'not run' : `${dp.toFixed(2)} ms` + rounds(dps!, 2),
    pass: dp === null ? null : dp <= 1.5,
    ...(dps && dps.length > 1 ? { perRound: dps.map((x) => round(x, 3)) } : {}),
  });
  ratio('many keys / one key throughput', 0.9, many, one);
  ratio('rejections / accepted throughput', 2.0, rej, one);
  ratio('two processes / one throughput', 1.4, two, one);
  const rt = (name: string, goal: number, r?: ScenarioResult) =>
    t.push({
      name,
      goal: `<= ${goal}`,
      measured: r?.redisRoundTrips ?? null,
      display: r?.redisRoundTrips == null ? 'not run' : r.redisRoundTrips.toFixed(2),
      pass: r?.redisRoundTrips == null ? null : r.redisRoundTrips <= goal + 0.01,
    });
  rt('Redis round trips per accepted request', 2, one);
  rt('Redis round trips per rejected-by-limit request', 1, rej);
  t.push({
    name: 'gateway peak RSS after many keys',
    goal: '< 200 MB',
    measured: many?.gatewayPeakRssMB ?? null,
    display: many?.gatewayPeakRssMB == null ? 'not run' : `${many.gatewayPeakRssMB.toFixed(0)} MB`,
    pass: many?.gatewayPeakRssMB == null ? null : many.gatewayPeakRssMB < 200,
  });
  return t;
}

// `npm run bench`: the benchmark suite (see bench/README.md). Settings from the environment:
//   BENCH_SUITE        backend (default): the scenarios below, in front of the reference backend;
//                      hop: the trivial-upstream comparison of bench/hop.ts (keygate, bare http-proxy-3,
//                      the peers of bench/peers/, nginx), BENCH_TARGETS its subset, BENCH_PROCESSES (3)
//                      independent processes per target, each measured every round
//   BENCH_DURATION     measured seconds per scenario (10)
//   BENCH_WARMUP       warm-up seconds per scenario (3)
//   BENCH_ROUNDS       rounds: every scenario runs once per round, interleaved; the median round is reported (1)
//   BENCH_CONNECTIONS  autocannon connections (50)
//   BENCH_KEYS         distinct keys of the many-keys scenario (10000)
//   BENCH_SCENARIOS    comma-separated subset: direct,bare-proxy,gateway,gateway-many-keys,gateway-rejections,gateway-2-processes,nginx
//   BENCH_PROFILE=1    CPU-profile the gateway in each gateway scenario, and the bare proxy in its own
//                      (bench/results/profiles/*.cpuprofile)
//   BENCH_NODE_FLAGS   extra node flags for the bare proxy and gateway processes, e.g. --trace-gc
//                      or --perf-basic-prof-only-functions (for Linux perf)
//   BENCH_PATH         the route to load, e.g. /v2/workspaces/{wid}/tags (default: the cheapest 2xx candidate)
//   BENCH_DATABASE_URL or DATABASE_URL   PostgreSQL (own schema, dropped after); unset: PGlite in each process
//   BENCH_REDIS_URL    an existing Redis (own prefix, cleaned after); unset: a private redis-server on a free port,
//                      or REDIS_URL when no redis-server is on PATH
//   BENCH_RESULTS_DIR  where the JSON goes (bench/results)
import { fileURLToPath } from 'node:url';
import { runSuite, SCENARIOS, type ScenarioName } from './suite.js';
import { table, profiles, writeJson } from './report.js';
import { runHopSuite } from './hop.js';

const env = process.env;
const num = (name: string, dflt: number) => {
  const v = env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(v)}`);
  return n;
};

async function main() {
  const suite = env.BENCH_SUITE || 'backend';
  if (suite !== 'backend' && suite !== 'hop')
    throw new Error(`BENCH_SUITE: unknown suite ${suite} (known: backend, hop)`);
  if (suite === 'hop') {
    const abortHop = new AbortController();
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        console.error(`${sig}: stopping everything the bench started`);
        abortHop.abort();
        setTimeout(() => process.exit(130), 20_000).unref();
      });
    }
    await runHopSuite({
      rounds: Math.round(num('BENCH_ROUNDS', 1)),
      warmup: num('BENCH_WARMUP', 3),
      duration: num('BENCH_DURATION', 10),
      connections: num('BENCH_CONNECTIONS', 50),
      processes: Math.round(num('BENCH_PROCESSES', 3)),
      only: env.BENCH_TARGETS
        ? env.BENCH_TARGETS.split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : undefined,
      databaseUrl: env.BENCH_DATABASE_URL || env.DATABASE_URL || undefined,
      resultsDir: env.BENCH_RESULTS_DIR ?? fileURLToPath(new URL('./results/', import.meta.url)),
      signal: abortHop.signal,
    });
    return;
  }
  const only = env.BENCH_SCENARIOS
    ? (env.BENCH_SCENARIOS.split(',')
        .map((s) => s.trim())
        .filter(Boolean) as ScenarioName[])
    : undefined;
  for (const s of only ?? [])
    if (!SCENARIOS.includes(s))
      throw new Error(`BENCH_SCENARIOS: unknown scenario ${s} (known: ${SCENARIOS.join(', ')})`);
  const abort = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`${sig}: stopping everything the bench started`);
      abort.abort();
      // The suite's cleanup runs on abort; leave once it had time to stop its processes.
      setTimeout(() => process.exit(130), 15_000).unref();
    });
  }
  const resultsDir = env.BENCH_RESULTS_DIR ?? fileURLToPath(new URL('./results/', import.meta.url));
  const r = await runSuite({
    duration: num('BENCH_DURATION', 10),
    warmup: num('BENCH_WARMUP', 3),
    rounds: Math.round(num('BENCH_ROUNDS', 1)),
    connections: num('BENCH_CONNECTIONS', 50),
    manyKeys: num('BENCH_KEYS', 10_000),
    only,
    profile: env.BENCH_PROFILE === '1',
    databaseUrl: env.BENCH_DATABASE_URL || env.DATABASE_URL || undefined,
    redisUrl: env.BENCH_REDIS_URL || undefined,
    fallbackRedisUrl: env.REDIS_URL || undefined,
    path: env.BENCH_PATH || undefined,
    resultsDir,
    signal: abort.signal,
  });
  // Without credentials: the command is written to the results file.
  const vars = Object.entries(env)
    .filter(([k]) => k.startsWith('BENCH_') || k === 'DATABASE_URL')
    .map(([k, v]) => `${k}=${(v ?? '').replace(/\/\/([^@/:]*):[^@/]*@/, '//$1:***@')}`);
  r.command = [...vars, 'npm run bench'].join(' ');
  const file = writeJson(resultsDir, r);
  const m = r.machine;
  console.log(`\n${m.cpus} x ${m.cpuModel}, ${m.memoryGB} GB, ${m.os}, node ${m.node}`);
  console.log(
    `${r.settings.rounds} x ${r.settings.duration} s per scenario, each after ${r.settings.warmup} s warm-up, ${r.settings.connections} connections, GET ${r.settings.path}`,
  );
  console.log(`gateway RSS idle after start: ${r.settings.gatewayIdleRssMB} MB\n`);
  console.log(table(r));
  if (r.fixedRate) {
    const f = r.fixedRate;
    console.log(
      `\nat a fixed ${f.rate} req/s (half the bare proxy's throughput), ${r.settings.connections} connections: ` +
        `bare proxy p50 ${f.bare.p50.toFixed(2)} / p99 ${f.bare.p99.toFixed(2)} ms, gateway p50 ${f.gateway.p50.toFixed(2)} / p99 ${f.gateway.p99.toFixed(2)} ms, ` +
        `p99 added ${(f.gateway.p99 - f.bare.p99).toFixed(2)} ms`,
    );
  }
  const p = profiles(r);
  if (p) console.log('\n' + p);
  console.log(`\nwritten: ${file}`);
  const failed = r.scenarios.filter((s) => !s.skipped && (s.errors > 0 || s.requests === 0));
  if (failed.length) {
    console.error(`scenarios with errors or no responses: ${failed.map((s) => s.name).join(', ')}`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});

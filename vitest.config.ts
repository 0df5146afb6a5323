import { spawnSync } from 'node:child_process';
import { configDefaults, defineConfig } from 'vitest/config';

// The cluster project starts redis-server processes: it runs where the binary is (every node-svc
// machine, CI included) and is left out elsewhere, so a bare laptop stays green.
const redisServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

// Checks that measure the machine (load, CPU per request, V8's feedback) rather than behaviour: they
// load both cores for a while, so they run apart, in `npm run test:perf`.
const PERF_FILES = ['test/bench/bench.test.ts', 'test/ops/tick-shape.test.ts'];

// Files of `npm test` run at a time: vitest's default (cores - 1, so one on two cores) unless
// KEYGATE_TEST_WORKERS says (4 measured 73 to 176 s against 218 s serially). KEYGATE_TEST_ISOLATE=0
// runs a worker's files in one module graph instead of a fresh process per file: importing src/ again
// for each of some 70 files is about a third of the run's CPU. Neither is the default yet: at load 10
// to 15, two of six such runs each failed one timing-sensitive test (test/ops/db-outage.test.ts,
// test/ops/redis-outage.test.ts) that passes alone.
const MAIN_WORKERS = Number(process.env.KEYGATE_TEST_WORKERS) || undefined;

const common = {
  // Each file gets its own database schema (copied from the template test/helpers/schema-template.ts
  // migrates once per run) and Redis prefix, so files may run in parallel.
  pool: 'forks' as const,
  testTimeout: 30_000,
  hookTimeout: 90_000,
  globalSetup: ['test/helpers/schema-template.ts'],
};

export default defineConfig({
  test: {
    projects: [
      // `npm test`: every behaviour test, against real PostgreSQL and Redis when DATABASE_URL and
      // REDIS_URL are set, else PGlite and the memory stores.
      // Each file has its own schema, Redis prefix, stack and ports: files may run side by side.
      {
        test: {
          ...common,
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...PERF_FILES],
          maxWorkers: MAIN_WORKERS,
          isolate: process.env.KEYGATE_TEST_ISOLATE !== '0',
        },
      },
      // `npm run test:perf`: the short bench run and the V8 feedback check.
      { test: { ...common, name: 'perf', include: PERF_FILES, testTimeout: 180_000 } },
      // `npm run test:cluster` (CI runs it after `npm test`): the gateway and limiter suites again,
      // against a three-primary Redis Cluster that test/helpers/cluster-setup.ts starts on loopback ports.
      ...(redisServer ? [{
        test: {
          ...common,
          name: 'cluster',
          include: ['test/gateway/**/*.test.ts', 'test/limits/**/*.test.ts'],
          globalSetup: [...common.globalSetup, 'test/helpers/cluster-setup.ts'],
        },
      }] : []),
    ],
  },
});

import { spawnSync } from 'node:child_process';
import { configDefaults, defineConfig } from 'vitest/config';
import { SERVICE_FREE_FILES } from './test/service-free-files.js';

// The cluster project starts redis-server processes: it runs where the binary is (every node-svc
// machine, CI included) and is left out elsewhere, so a bare laptop stays green.
const redisServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

// Checks that measure the machine or V8 (load, CPU per request, V8's feedback, what the young
// generation promotes, what a list's node keeps) rather than behaviour: they run apart, in
// `npm run test:perf`, and the load ones keep both cores busy for a while.
const PERF_FILES = [
  'test/bench/bench.test.ts',
  'test/ops/tick-shape.test.ts',
  'test/gateway/young-garbage.test.ts',
  'test/ops/live-list-fields.test.ts',
];

// Files of `npm test` run at a time: most files wait on sockets and child processes, so 3 share the two
// cores (KEYGATE_TEST_WORKERS overrides). A worker runs its files one after another in one module graph
// (KEYGATE_TEST_ISOLATE=1 gives each file a fresh process again): importing src/ anew for each of some
// 70 files was about a third of the run's CPU. Files share no state through modules: each builds its own
// stack, schema, Redis prefix and ports; module-level memos are pure (route matches, path verdicts).
// Measured on this 2-core machine: serially 218 s (load 1 to 4), 3 workers isolated 92 s, 3 workers
// shared 72 to 73 s (load 5).
const MAIN_WORKERS = Number(process.env.KEYGATE_TEST_WORKERS) || 3;
const MAIN_ISOLATE = process.env.KEYGATE_TEST_ISOLATE === '1';
// CI's pass with the services leaves to its default pass the files that never use them (see there).
const SERVICE_PASS_EXCLUDE = process.env.KEYGATE_TEST_SERVICE_PASS === '1' ? SERVICE_FREE_FILES : [];

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
          include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...PERF_FILES, ...SERVICE_PASS_EXCLUDE],
          maxWorkers: MAIN_WORKERS,
          isolate: MAIN_ISOLATE,
        },
      },
      // `npm run test:perf`: the short bench run and the checks of what V8 keeps.
      { test: { ...common, name: 'perf', include: PERF_FILES, testTimeout: 180_000 } },
      // `npm run test:cluster` (CI runs it after `npm test`): the gateway and limiter suites again,
      // against a three-primary Redis Cluster that test/helpers/cluster-setup.ts starts on loopback ports.
      ...(redisServer
        ? [
            {
              test: {
                ...common,
                name: 'cluster',
                include: ['test/gateway/**/*.test.ts', 'test/limits/**/*.test.ts'],
                exclude: [...configDefaults.exclude, ...PERF_FILES],
                globalSetup: [...common.globalSetup, 'test/helpers/cluster-setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
});

import { spawnSync } from 'node:child_process';
import { defineConfig } from 'vitest/config';

// The cluster project starts redis-server processes: it runs where the binary is (every node-svc
// machine, CI included) and is left out elsewhere, so `npm test` stays green on a bare laptop.
const redisServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

const common = {
  // Each file gets its own database schema and Redis prefix, so files may run in parallel.
  pool: 'forks' as const,
  testTimeout: 30_000,
  hookTimeout: 90_000,
};

export default defineConfig({
  test: {
    projects: [
      { test: { ...common, name: 'main', include: ['test/**/*.test.ts'] } },
      // Issue 5: the same gateway and limiter suites against a three-primary Redis Cluster that
      // test/helpers/cluster-setup.ts starts on loopback ports.
      ...(redisServer ? [{
        test: {
          ...common,
          name: 'cluster',
          include: ['test/gateway/**/*.test.ts', 'test/limits/**/*.test.ts'],
          globalSetup: ['test/helpers/cluster-setup.ts'],
        },
      }] : []),
    ],
  },
});

// Files whose every program and command runs on the in-memory stores or PGlite, whatever DATABASE_URL
// and REDIS_URL say: a run with the services repeats exactly what a run without them does. `.ci/run`
// runs `npm test` both ways; its pass with the services sets KEYGATE_TEST_SERVICE_PASS=1 and leaves
// these to the default pass, which runs them as they are (some 380 s of file time of a 610 s pass,
// measured at `feb167c`). `npm test` runs them wherever it runs. test/structure/service-free.test.ts
// keeps the list honest: no file here may reach for a service.
export const SERVICE_FREE_FILES = [
  'packages/verifier/test/package.test.ts',
  'test/admin-api/hostile-input.test.ts',
  'test/cli/data-dir-lock.test.ts',
  'test/cli/help.test.ts',
  'test/config/profile-program.test.ts',
  'test/loadtest/cli-profile.test.ts',
  'test/loadtest/cli.test.ts',
  'test/openapi/profile.test.ts',
  'test/ops/drain.test.ts',
  'test/ops/log-backpressure.test.ts',
  'test/ops/old-generation.test.ts',
  'test/ops/pretenuring.test.ts',
  'test/ops/process.test.ts',
  'test/ops/redis-breaker.test.ts',
  'test/ops/scavenge.test.ts',
];

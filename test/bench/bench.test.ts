// A short run of the benchmark suite (bench/): every scenario starts, runs, answers what it should
// and stops, and the gateway scenarios are decided by Redis in one round trip per request. The
// timings of a short run on a shared machine mean little; the full run (`npm run bench`) writes
// bench/RESULTS.md's table. Part of `npm run test:perf`, not `npm test`: it loads both cores.
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSuite, SCENARIOS, type SuiteResult } from '../../bench/suite.js';
import { writeJson, table } from '../../bench/report.js';
import { which } from '../../bench/procs.js';
import { hasRedisServer } from '../helpers/redis-server.js';

const dir = mkdtempSync(join(tmpdir(), 'keygate-bench-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The bench needs Redis: its own redis-server, or REDIS_URL (CI has both; a laptop may have neither).
describe.runIf(hasRedisServer() || Boolean(process.env.REDIS_URL))('bench suite (short run)', () => {
  it('runs every scenario without errors and reports every target', { timeout: 180_000 }, async () => {
    const started = Date.now();
    const r: SuiteResult = await runSuite({
      duration: 2,
      warmup: 1,
      rounds: 1,
      connections: 10,
      manyKeys: 300,
      probe: 50,
      databaseUrl: process.env.DATABASE_URL || undefined,
      fallbackRedisUrl: process.env.REDIS_URL || undefined,
      resultsDir: dir,
      log: () => {},
    });
    const minutes = Math.floor(Date.now() / 60_000) - Math.floor(started / 60_000) + 1;
    const file = writeJson(dir, r);
    expect(JSON.parse(readFileSync(file, 'utf8')).scenarios).toHaveLength(SCENARIOS.length);
    expect(table(r)).toContain('2. bare proxy (baseline)');

    const nginx = await which('nginx');
    expect(r.scenarios.map((s) => s.name)).toEqual([...SCENARIOS]);
    for (const s of r.scenarios) {
      if (s.name === 'nginx' && !nginx) {
        expect(s.skipped).toMatch(/nginx/);
        continue;
      }
      expect(s.skipped, s.name).toBeUndefined();
      expect(s.errors, `${s.name}: connection errors`).toBe(0);
      expect(s.requests, `${s.name}: responses`).toBeGreaterThan(0);
      const expected = s.name === 'gateway-rejections' ? '429' : '200';
      const count = (pred: (code: string) => boolean) =>
        Object.entries(s.statuses)
          .filter(([c]) => pred(c))
          .reduce((n, [, k]) => n + k, 0);
      // A 5xx under the load of a shared 2-core machine is the gateway's (see bench/RESULTS.md): tolerated
      // below 10 % here and printed, never hidden (make it 0 once a Redis timeout no longer answers 500).
      const serverErrors = count((c) => c.startsWith('5'));
      if (serverErrors) console.warn(`${s.name}: ${serverErrors} 5xx of ${s.requests}`);
      expect(serverErrors / s.requests, `${s.name}: 5xx share`).toBeLessThan(0.1);
      const other = count((c) => c !== expected && !c.startsWith('5'));
      // The over-limit key gets one token back at each new minute: one accepted request per minute crossed.
      expect(other, `${s.name}: statuses ${JSON.stringify(s.statuses)}`).toBeLessThanOrEqual(
        s.name === 'gateway-rejections' ? minutes : 0,
      );
      if (s.name.startsWith('gateway')) {
        // Redis decided every call: a breaker that opened (calls answered without Redis) makes the
        // run's numbers those of the memory fallback, so it fails here rather than passing unmeasured.
        expect(s.degradedCalls, `${s.name}: store calls without Redis`).toBe(0);
        expect(s.redisRoundTrips, s.name).toBeGreaterThan(0);
        expect(s.gatewayPeakRssMB, s.name).toBeGreaterThan(0);
        expect(s.redisCpuMicrosPerRequest, s.name).toBeGreaterThan(0);
        expect(s.hopCpuMicrosPerRequest, s.name).toBeGreaterThan(0);
      }
    }
    // The same offered load through both: the latency the gateway adds below saturation.
    expect(r.fixedRate?.rate).toBeGreaterThan(0);
    expect(r.fixedRate!.gateway.p99).toBeGreaterThan(0);
    expect(r.fixedRate!.bare.p99).toBeGreaterThan(0);
    const measured = r.targets.filter((t) => t.measured !== null).map((t) => t.name);
    expect(measured).toHaveLength(8);
    // The count that does not depend on the machine's speed: a cached key costs one round trip (the
    // gate script), accepted or rejected; the slack covers the first, uncached request.
    for (const name of ['gateway', 'gateway-rejections']) {
      expect(r.scenarios.find((s) => s.name === name)!.redisRoundTrips, name).toBeLessThanOrEqual(1.05);
    }
  });
});

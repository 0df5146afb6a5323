// A short run of the benchmark suite (bench/, issue 6): every scenario starts, runs, answers what it
// should and stops. The numbers of a short run on a shared machine mean little; the full run
// (`npm run bench`) writes bench/RESULTS.md's table.
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSuite, SCENARIOS, targets, type ScenarioResult, type SuiteResult } from '../../bench/suite.js';
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
      const count = (pred: (code: string) => boolean) => Object.entries(s.statuses).filter(([c]) => pred(c)).reduce((n, [, k]) => n + k, 0);
      // A 5xx under the load of a shared 2-core machine is the gateway's (see bench/RESULTS.md): tolerated
      // below 10 % here and printed, never hidden (make it 0 once a Redis timeout no longer answers 500).
      const serverErrors = count((c) => c.startsWith('5'));
      if (serverErrors) console.warn(`${s.name}: ${serverErrors} 5xx of ${s.requests}`);
      expect(serverErrors / s.requests, `${s.name}: 5xx share`).toBeLessThan(0.1);
      const other = count((c) => c !== expected && !c.startsWith('5'));
      // The over-limit key gets one token back at each new minute: one accepted request per minute crossed.
      expect(other, `${s.name}: statuses ${JSON.stringify(s.statuses)}`).toBeLessThanOrEqual(s.name === 'gateway-rejections' ? minutes : 0);
      if (s.name.startsWith('gateway')) {
        // 0 is possible: with Redis's circuit breaker open (a stalled host), calls are answered without it.
        expect(s.redisRoundTrips, s.name).toBeGreaterThanOrEqual(0);
        expect(s.degradedCalls, s.name).not.toBeNull();
        expect(s.gatewayPeakRssMB, s.name).toBeGreaterThan(0);
        expect(s.redisCpuMicrosPerRequest, s.name).not.toBeNull();
        expect(s.hopCpuMicrosPerRequest, s.name).toBeGreaterThan(0);
      }
    }
    // The same offered load through both: the latency the gateway adds below saturation.
    expect(r.fixedRate?.rate).toBeGreaterThan(0);
    expect(r.fixedRate!.gateway.p99).toBeGreaterThan(0);
    expect(r.fixedRate!.bare.p99).toBeGreaterThan(0);
    const measured = r.targets.filter((t) => t.measured !== null).map((t) => t.name);
    expect(measured).toHaveLength(8);
    // The count that does not depend on the machine's speed, while Redis rules: a cached key costs one
    // round trip (the gate script), accepted or rejected; the slack covers the first, uncached request.
    for (const name of ['gateway', 'gateway-rejections']) {
      const one = r.scenarios.find((s) => s.name === name)!;
      if (one.degradedCalls === 0) expect(one.redisRoundTrips, name).toBeLessThanOrEqual(1.05);
      else console.warn(`${name}: ${one.degradedCalls} store calls without Redis (breaker open); round trips not checked`);
    }
  });
});

describe('bench targets', () => {
  const scenario = (name: ScenarioResult['name'], rounds: [number, number][]): ScenarioResult =>
    ({ name, rps: rounds[0][0], p99: rounds[0][1], connections: 50, rounds: rounds.map(([rps, p99]) => ({ rps, p50: 1, p99, errors: 0, non2xx: 0 })) }) as ScenarioResult;

  it('compares two scenarios round by round and takes the median of the rounds', () => {
    // Round 2 is the median round of both scenarios by throughput only when mixed; paired, the
    // ratios are 0.9, 0.5 and 0.95 and the p99 differences 1, 5 and 0.5 ms.
    const bare = scenario('bare-proxy', [[1000, 10], [2000, 10], [1200, 10]]);
    const gw = scenario('gateway', [[900, 11], [1000, 15], [1140, 10.5]]);
    const [tp, p99] = targets([bare, gw]);
    expect(tp.measured).toBe(0.9);
    expect(tp.perRound).toEqual([0.9, 0.5, 0.95]);
    expect(tp.pass).toBe(true);
    expect(tp.display).toBe('0.90 (rounds 0.90, 0.50, 0.95)');
    expect(p99.measured).toBe(1);
    expect(p99.pass).toBe(true);
  });

  it('with one round, compares that round', () => {
    const [tp, p99] = targets([scenario('bare-proxy', [[1000, 10]]), scenario('gateway', [[800, 12]])]);
    expect(tp.measured).toBe(0.8);
    expect(tp.pass).toBe(false);
    expect(tp.display).toBe('0.80');
    expect(p99.measured).toBe(2);
    expect(p99.pass).toBe(false);
  });
});

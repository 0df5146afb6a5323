// docs/decisions.md section 3, "Rate-limit windows and headers": exactly the budget passes, also when a burst
// of parallel requests reaches the gateway at once with Redis healthy. A burst keeps the event loop
// busy, more so on a loaded machine; that must not pass for a Redis outage (docs/decisions.md section 1 allows
// the per-instance fallback only when Redis cannot be reached), or the fallback's fresh counters
// over-admit. Each case runs on a quiet gateway and on one whose event loop stalls now and then.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { haveRedis } from '../helpers/redis.js';
import { appRedisEnv, callsWithoutRedis } from '../helpers/app-redis.js';
import { stallEveryPhase } from '../helpers/busy-loop.js';
import { K } from '../fixtures/seed.js';
import { testSecret } from '../helpers/keys.js';

// Each burst is a fresh window, all 150 requests racing for it; ten windows per case (forty in all, and
// the cluster project runs them again) where an over-admitting limiter failed every one.
const BURSTS = 10;
const BURST_SIZE = 150;
const KEY_BUDGET = 20; // growth plan, read bucket (config/plans.json)
const IP_BUDGET = 100;
// 20 bursts of 150 requests took 10 to 15 s per case with other files running beside this one on two
// loaded cores (10 bursts, up to 10 s on cores busier still): the default 30 s is too close.
const BURSTS_TIMEOUT_MS = 120_000;

// Sixteen more keys of workspace 100 (org 1, growth): a burst spread over them spends at most 16 per key,
// so only the address's layer can refuse.
const spreadKeys = Array.from({ length: 16 }, (_, n) => testSecret('svc_ws_', `Burst${String(n).padStart(2, '0')}`));
const extraKeys = spreadKeys.map((secret, n) => ({
  id: 5000 + n,
  secret,
  name: `burst ${n}`,
  workspaceId: 100,
  role: 'ADMIN',
  scopes: ['tags:read'],
  createdBy: 10,
}));

const clock = new FakeClock();
let s: Stack;
let rec: Recorder;
beforeAll(async () => {
  if (!haveRedis()) return;
  rec = await startRecorder();
  // The gateway builds its stores as in production: Redis behind the breaker, default timeouts.
  s = await startStack({
    clock,
    appStores: true,
    env: appRedisEnv(),
    upstreamOverride: rec.url,
    extra: { apiKeys: extraKeys },
  });
});
afterAll(async () => {
  await s?.close();
  await rec?.close();
});

/** One burst: every request sent at once; the statuses and Envelope A codes that came back. */
async function burst(keyOf: (n: number) => string, ip: string) {
  const rs = await Promise.all(
    Array.from({ length: BURST_SIZE }, (_, n) => s.request('GET', '/v2/workspaces/100/tags', { key: keyOf(n), ip })),
  );
  return {
    passed: rs.filter((r) => r.status === 200).length,
    refused: rs.filter((r) => r.status === 429 && r.body?.errorCode === '150005').length,
    other: rs
      .filter((r) => r.status !== 200 && !(r.status === 429 && r.body?.errorCode === '150005'))
      .map((r) => r.status),
  };
}

/** `BURSTS` bursts, each in a fresh window: how many passed in each. */
async function bursts(keyOf: (n: number) => string, ipPrefix: string): Promise<number[]> {
  const passed: number[] = [];
  for (let b = 0; b < BURSTS; b++) {
    clock.advance(60_000);
    const r = await burst(keyOf, `${ipPrefix}.${b}.1`);
    expect(r.other).toEqual([]);
    expect(r.refused).toBe(BURST_SIZE - r.passed);
    passed.push(r.passed);
  }
  return passed;
}

describe.runIf(haveRedis())('bursts on real Redis', () => {
  for (const busy of [false, true]) {
    const on = busy ? 'a gateway whose event loop stalls 100 ms every 150 ms' : 'a quiet gateway';
    const withStalls = async <T>(run: () => Promise<T>): Promise<T> => {
      const stop = busy ? stallEveryPhase(150) : () => {};
      try {
        return await run();
      } finally {
        stop();
      }
    };

    it(
      `one key, one address, ${BURST_SIZE} at once on ${on}: exactly the key's budget passes, ${BURSTS} times`,
      async () => {
        const passed = await withStalls(() => bursts(() => K.wsAdmin, `10.70.${busy ? 1 : 0}`));
        expect(passed).toEqual(Array(BURSTS).fill(KEY_BUDGET));
        expect(await callsWithoutRedis(s.adminUrl)).toBe(0);
      },
      BURSTS_TIMEOUT_MS,
    );

    it(
      `one address, ${BURST_SIZE} at once over sixteen keys on ${on}: exactly the address's budget passes, ${BURSTS} times`,
      async () => {
        const passed = await withStalls(() =>
          bursts((n) => spreadKeys[n % spreadKeys.length], `10.71.${busy ? 1 : 0}`),
        );
        expect(passed).toEqual(Array(BURSTS).fill(IP_BUDGET));
        expect(await callsWithoutRedis(s.adminUrl)).toBe(0);
      },
      BURSTS_TIMEOUT_MS,
    );
  }
});

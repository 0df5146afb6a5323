// A busy gateway is not a Redis outage (docs/decisions.md section 1: the fallback, or 503 in closed mode, only
// when Redis cannot be reached). The gateway's own event loop stalls for 100 ms at a time, as on a
// loaded machine or under a long synchronous task, while requests flow against a healthy Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { haveRedis } from '../helpers/redis.js';
import { appRedisEnv, callsWithoutRedis, metricValue } from '../helpers/app-redis.js';
import { stallEveryPhase } from '../helpers/busy-loop.js';
import { K } from '../fixtures/seed.js';

let open: Stack;
let closed: Stack;
let rec: Recorder;
beforeAll(async () => {
  if (!haveRedis()) return;
  rec = await startRecorder();
  // Production defaults (REDIS_COMMAND_TIMEOUT_MS included): nothing here is tuned for the test.
  open = await startStack({
    appStores: true,
    env: { ...appRedisEnv(), RATE_LIMIT_FAILURE_MODE: 'open' },
    upstreamOverride: rec.url,
  });
  closed = await startStack({
    appStores: true,
    db: open.db,
    env: { ...appRedisEnv(), RATE_LIMIT_FAILURE_MODE: 'closed' },
    upstreamOverride: rec.url,
  });
});
afterAll(async () => {
  await closed?.close();
  await open?.close();
  await rec?.close();
});

describe.runIf(haveRedis())('event-loop stalls against a healthy Redis', () => {
  it('100 ms stalls every 150 ms for 3 s: no call without Redis, no 503', async () => {
    const statuses: number[] = [];
    let stop = false;
    let n = 0;
    // Spends (tags), reads (rate-limit route), and failed authentications with their cooldown.
    const worker = async (s: Stack) => {
      while (!stop) {
        const i = n++;
        const ip = `10.72.${i % 250}.${1 + (i % 3)}`;
        const r =
          i % 3 === 0
            ? await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip })
            : i % 3 === 1
              ? await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.ownerPk, ip })
              : await s.request('GET', '/v2/workspaces/100/tags', { key: 'svc_ws_' + 'S'.repeat(40), ip });
        statuses.push(r.status);
      }
    };
    const stopStalls = stallEveryPhase(150);
    const workers = [open, closed].flatMap((s) => Array.from({ length: 6 }, () => worker(s)));
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    stop = true;
    stopStalls();
    await Promise.all(workers);

    expect(statuses.length).toBeGreaterThan(20); // requests did flow (a loaded CI machine answers fewer)
    expect(statuses.filter((st) => st >= 500)).toEqual([]);
    expect(await callsWithoutRedis(open.adminUrl)).toBe(0);
    expect(await callsWithoutRedis(closed.adminUrl)).toBe(0);
    for (const s of [open, closed])
      expect(await metricValue(s.adminUrl, 'keygate_degraded_transitions_total{to="degraded"}')).toBe(0);
  });
});

// Issue 24, item 3: three gateway instances on one Redis, Redis killed mid-window, open mode. Each
// instance used to fall back to the whole budget from zero, so the fleet admitted the budget once
// before the kill and three times after it. Now each falls back to its share of what it last saw
// left in the window (src/limits/fleet.ts), so the fleet stays near one budget.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResilientStores } from '../../src/limits/resilient/index.js';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { hasRedisServer, ownRedis, type OwnRedis } from '../helpers/redis-server.js';
import { K } from '../fixtures/seed.js';

const CAN = hasRedisServer();
const READ_BUDGET = 20; // the growth plan's read budget per key and minute
let redis: OwnRedis;
const stacks: Stack[] = [];
// Every instance on one clock, 10 s into a minute: the whole test is one window.
const clock = new FakeClock();
clock.setSecond(10);

beforeAll(async () => {
  if (!CAN) return;
  redis = await ownRedis();
  const redisPrefix = `fleet${Date.now()}:`;
  const env = { REDIS_URL: redis.url, RATE_LIMIT_FAILURE_MODE: 'open' };
  stacks.push(await startStack({ appStores: true, redisPrefix, clock, env }));
  for (let n = 1; n < 3; n++)
    stacks.push(await startStack({ appStores: true, redisPrefix, clock, db: stacks[0].db, env }));
}, 120_000);
afterAll(async () => {
  await redis?.start();
  for (const s of stacks.reverse()) await s.close();
  await redis?.stop();
});

const degraded = (s: Stack) => (s.stores as ResilientStores).degraded();

async function until(cond: () => boolean | Promise<boolean>, ms: number) {
  const deadline = performance.now() + ms;
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error('condition not reached: ' + cond.toString().slice(0, 120));
    await new Promise((r) => setTimeout(r, 20));
  }
}

let ipSeq = 0;
/** One read with the key through instance `s`, each from an address of its own (the address layer stays out of the way). */
const read = (s: Stack) =>
  s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: `10.44.${ipSeq >> 8}.${ipSeq++ & 255}` });

describe.runIf(CAN)('three instances, Redis killed mid-window (open mode)', () => {
  it('admit about one budget for a key over the minute, not one per instance', async () => {
    // Every instance beats into the live set once a second: after two seconds each counts three.
    await until(async () => stacks.every((s) => s.app.gatewayUrl !== undefined), 1_000);
    await new Promise((r) => setTimeout(r, 2_500));

    let admitted = 0;
    for (let n = 0; n < 6; n++) {
      const r = await read(stacks[n % 3]);
      expect(r.status).toBe(200);
      admitted++;
    }
    await redis.stop();
    for (const s of stacks) await until(() => degraded(s), 5_000);

    const perInstance: number[] = [];
    for (const s of stacks) {
      let here = 0;
      for (let n = 0; n < READ_BUDGET + 5; n++) {
        const r = await read(s);
        expect([200, 429]).toContain(r.status);
        if (r.status === 200) here++;
      }
      perInstance.push(here);
      admitted += here;
    }
    // Before: 6 + 3 x 20 = 66. The shares: what each instance last saw left (20 - 4, 5 or 6) split
    // three ways, rounded up: 6 + 5 + 5, so 22 in all.
    console.log(
      `fleet fallback: ${admitted} admitted of a ${READ_BUDGET} budget (per instance after the kill: ${perInstance.join(', ')})`,
    );
    expect(admitted).toBeLessThanOrEqual(READ_BUDGET + stacks.length);
    expect(admitted).toBeGreaterThanOrEqual(READ_BUDGET - stacks.length);
  }, 60_000);
});

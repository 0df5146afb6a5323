// Issue 36, item 1: the open-mode fallback's bound with a monthly quota. Two real gateway programs on
// one PostgreSQL schema and a redis-server of the test's own, killed mid-window
// (test/helpers/fallback-bound.ts; several runs: bench/diagnostics/fallback-bound.ts). Each program
// falls back to its share of what it last saw left of each counter, the month's included
// (docs/redis.md, "Bounded while Redis is away"): the fleet admits the budget, plus at most one per
// program for the rounding of the shares and the counts the other admitted after it last looked.
import { afterEach, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { fallbackBound, PROGRAMS, type FallbackKind } from '../helpers/fallback-bound.js';

// The programs are other processes: they need a real PostgreSQL (DATABASE_URL), and redis-server to
// start and kill a Redis of the test's own (never the shared one).
const CAN = Boolean(process.env.DATABASE_URL) && hasRedisServer();
const drops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const drop of drops.splice(0)) await drop();
});

const cases: [FallbackKind, string][] = [
  ['month-spent', 'a monthly quota spent before the kill admits nothing more than the bound'],
  ['minute-quota', "a key of an organization with a monthly quota keeps its minute's share"],
  ['minute-none', 'a key of an organization without a monthly quota keeps its share'],
];

describe.runIf(CAN)('open-mode fallback, redis-server killed mid-window', () => {
  for (const [kind, title] of cases)
    it(
      title,
      async () => {
        const db = await openTestDb();
        drops.push(() => db.drop());
        const run = await fallbackBound(kind, db, process.env.DATABASE_URL!);
        console.log(`fallback bound: ${JSON.stringify(run)}`);
        expect(run.oneMinute).toBe(true);
        expect(run.admittedBefore).toBe(kind === 'month-spent' ? run.budget : 6);
        // Before: 19 of 10 (the month unrecorded on the cached path), 26 of 20 (one uncached request of
        // the organization made each program forget every minute's count).
        expect(run.admitted).toBeLessThanOrEqual(run.budget + PROGRAMS);
        if (kind !== 'month-spent') expect(run.admitted).toBeGreaterThanOrEqual(run.budget - PROGRAMS);
      },
      240_000,
    );
});

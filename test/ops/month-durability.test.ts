// Issue 36, item 3: a month's counts survive Redis losing them. Two real gateway programs on one
// PostgreSQL schema; Redis (a server of the test's own) restarted without persistence mid-month, and a
// Sentinel failover to a replica still resynchronising (empty): what the organization spent of its
// quota must not come back (test/helpers/month-outage.ts; several runs: bench/diagnostics/month-outage.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { monthOutage, QUOTA, SPENT_BEFORE } from '../helpers/month-outage.js';

// The programs are other processes: they need a real PostgreSQL (DATABASE_URL), and redis-server to
// start, kill and restart a Redis of the test's own (never the shared one).
const CAN = Boolean(process.env.DATABASE_URL) && hasRedisServer();
const drops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const drop of drops.splice(0)) await drop();
});

describe.runIf(CAN)("a month's counts when Redis loses them", () => {
  for (const kind of ['restart', 'sentinel'] as const)
    it(`${kind === 'restart' ? 'Redis restarted without persistence' : 'failover to a resynchronising replica'}: the spent quota does not come back`, async () => {
      const db = await openTestDb();
      drops.push(() => db.drop());
      const run = await monthOutage(kind, db, process.env.DATABASE_URL!);
      console.log(`month outage: ${JSON.stringify(run)}`);
      expect(run.admittedBefore).toBe(SPENT_BEFORE);
      // Nothing was admitted in the checkpoint intervals before the loss, so the documented bound
      // (what the fleet admitted in the last two intervals) is zero: exactly the quota, no more.
      expect(run.admitted).toBe(QUOTA);
      // PostgreSQL held the month's count before the outage.
      expect(run.checkpointBefore).toBe(SPENT_BEFORE);
      expect(run.refusedAfter).toBeGreaterThan(0);
    }, 240_000);

  it('a program stopped (SIGTERM) before its next checkpoint writes the month first, after the drain', async () => {
    const db = await openTestDb();
    drops.push(() => db.drop());
    const run = await monthOutage('stop', db, process.env.DATABASE_URL!);
    expect(run.admittedBefore).toBe(SPENT_BEFORE);
    expect(run.checkpointBefore).toBe(SPENT_BEFORE);
  }, 240_000);
});

// The usage history's partitions (src/access/usage/partitions.ts) as an injected clock moves: made
// ahead, dropped whole past each table's retention, by one instance at a time. On a real PostgreSQL
// (DATABASE_URL) and on PGlite.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartitionUpkeep, upkeepPartitions } from '../../../src/access/usage/partitions.js';
import { partitionsOf } from '../../../src/access/usage/queries.js';
import { UsageWriter } from '../../../src/access/usage/writer.js';
import { openTestDb } from '../../helpers/db.js';
import { FakeClock } from '../../helpers/stack.js';

const DAY = 86_400_000;
const RETENTION = { minuteDays: 7, hourDays: 90, dayDays: 400 };

const backends = [
  // A real PostgreSQL server: needs DATABASE_URL (the CI run sets it; the default path has none).
  { name: 'PostgreSQL', skip: !process.env.DATABASE_URL, open: () => openTestDb() },
  { name: 'PGlite', skip: false, open: () => openTestDb({ forcePglite: true }) },
];

describe.each(backends)('usage partitions on $name', ({ name, skip, open }) => {
  let db: Awaited<ReturnType<typeof open>>;
  beforeAll(async () => {
    if (!skip) db = await open();
  }, 120_000);
  afterAll(async () => {
    await db?.drop();
  });

  const all = async () => ({
    minute: await partitionsOf(db, 'usage_minute'),
    hour: await partitionsOf(db, 'usage_hour'),
    day: await partitionsOf(db, 'usage_day'),
  });
  /** The organization tables' partitions, named back as their key tables' (usage_org_x_p... as usage_x_p...). */
  const orgs = async () => ({
    minute: (await partitionsOf(db, 'usage_org_minute')).map((n) => n.replace('usage_org_', 'usage_')),
    hour: (await partitionsOf(db, 'usage_org_hour')).map((n) => n.replace('usage_org_', 'usage_')),
    day: (await partitionsOf(db, 'usage_org_day')).map((n) => n.replace('usage_org_', 'usage_')),
  });

  it.skipIf(skip)('makes today and the next days ahead, and drops only what is wholly past retention', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 30, 23, 30));
    const upkeep = new PartitionUpkeep(db, clock, RETENTION);
    expect(await upkeep.run()).toEqual({ created: 16, dropped: [] });
    expect(await orgs()).toEqual(await all());
    expect(await all()).toEqual({
      minute: ['usage_minute_p20260130', 'usage_minute_p20260131', 'usage_minute_p20260201', 'usage_minute_p20260202'],
      hour: ['usage_hour_p202601', 'usage_hour_p202602'],
      day: ['usage_day_p202601', 'usage_day_p202602'],
    });
    // Again at once: nothing to do.
    expect(await upkeep.run()).toEqual({ created: 0, dropped: [] });

    // Rows in the first day's partitions, so a drop is seen to take them whole.
    const w = new UsageWriter({ db, clock });
    w.record('v2', { route: 'r', code: null, organizationId: 1, keyId: 1 }, 200);
    await w.flush();

    // 7 days and a minute after the end of 30 January: its minute partition is past retention.
    clock.t = Date.UTC(2026, 0, 31) + 7 * DAY - 60_000;
    expect((await upkeep.run())?.dropped).toEqual([]);
    clock.advance(60_000);
    const r = await upkeep.run();
    expect(r?.dropped).toEqual(['usage_minute_p20260130', 'usage_org_minute_p20260130']);
    expect(await db.query('SELECT count(*)::int AS n FROM usage_minute')).toEqual([{ n: 0 }]);
    expect(await db.query('SELECT count(*)::int AS n FROM usage_hour')).toEqual([{ n: 1 }]);
    expect(await db.query('SELECT count(*)::int AS n FROM usage_org_minute')).toEqual([{ n: 0 }]);
    expect(await db.query('SELECT count(*)::int AS n FROM usage_org_hour')).toEqual([{ n: 1 }]);
    expect(await orgs()).toEqual(await all());
    expect((await all()).minute).toEqual([
      'usage_minute_p20260131',
      'usage_minute_p20260201',
      'usage_minute_p20260202',
      // The clock jumped: made ahead from the day it reads, no days between filled in (the writer makes
      // a missing one itself).
      'usage_minute_p20260206',
      'usage_minute_p20260207',
      'usage_minute_p20260208',
      'usage_minute_p20260209',
      'usage_minute_p20260210',
    ]);

    // January's hours go 90 days after its end (1 May), its days 400 days after.
    clock.t = Date.UTC(2026, 3, 30);
    expect((await upkeep.run())?.dropped.filter((n) => !/^usage_(org_)?minute/.test(n))).toEqual([]);
    clock.t = Date.UTC(2026, 4, 2);
    const may = await upkeep.run();
    expect(may?.dropped.filter((n) => !/^usage_(org_)?minute/.test(n))).toEqual([
      'usage_hour_p202601',
      'usage_org_hour_p202601',
    ]);
    expect((await all()).day[0]).toBe('usage_day_p202601');
    clock.t = Date.UTC(2026, 1, 1) + 400 * DAY;
    const later = await upkeep.run();
    expect(later?.dropped).toContain('usage_day_p202601');
    expect(later?.dropped).toContain('usage_hour_p202602');
    expect(later?.dropped).toContain('usage_org_day_p202601');
    expect((await all()).day).not.toContain('usage_day_p202601');
    expect(await orgs()).toEqual(await all());
    expect(await db.query('SELECT count(*)::int AS n FROM usage_day')).toEqual([{ n: 0 }]);
    expect(await db.query('SELECT count(*)::int AS n FROM usage_org_day')).toEqual([{ n: 0 }]);
  });

  // Another instance's upkeep holds the lock in an open transaction: this one skips. Not on PGlite: one
  // connection, whose transactions run one after another, so there is no other instance to skip for.
  it.skipIf(skip || name === 'PGlite')('one instance at a time: the other skips while the lock is held', async () => {
    const now = Date.UTC(2026, 5, 1);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    const first = db.tx(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock(7355610, hashtext(current_schema()))');
      inside();
      await held;
    });
    await entered;
    expect(await upkeepPartitions(db, now, RETENTION)).toBeNull();
    release();
    await first;
    expect(await upkeepPartitions(db, now, RETENTION)).not.toBeNull();
  });
});

// The usage history's writer (src/access/usage/writer.ts): counts in memory, one transaction of three
// upserts per flush, exact sums over instances, counts kept across a failed flush and a bounded drop
// beyond the cap. On a real PostgreSQL (DATABASE_URL) and on PGlite, the default path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/index.js';
import { UsageWriter } from '../../../src/access/usage/writer.js';
import { upkeepPartitions } from '../../../src/access/usage/partitions.js';
import { partitionsOf } from '../../../src/access/usage/queries.js';
import type { UsageTrace } from '../../../src/access/usage/outcome.js';
import { openTestDb } from '../../helpers/db.js';
import { FakeClock } from '../../helpers/stack.js';

const RETENTION = { minuteDays: 7, hourDays: 90, dayDays: 400 };
const ROUTE = '/v2/workspaces/{workspaceId}/accounts';
const ok = (keyId: number, organizationId = 1): UsageTrace => ({ route: ROUTE, code: null, organizationId, keyId });
const unkeyed: UsageTrace = { route: 'unmatched', code: '150002', organizationId: null, keyId: null };

type Sums = Record<string, number>;

/** Each table's counts by "key outcome", and its rows. */
async function sums(db: Db, table: string): Promise<{ by: Sums; rows: number }> {
  const rows = await db.query(`SELECT key_id, organization_id, outcome, bucket, count FROM ${table}`);
  const by: Sums = {};
  for (const r of rows) by[`${r.key_id} ${r.outcome}`] = (by[`${r.key_id} ${r.outcome}`] ?? 0) + Number(r.count);
  return { by, rows: rows.length };
}

/**
 * Each organization table's rows as "organization bucket outcome count", and the same summed from its key
 * table: the writer keeps them equal.
 */
async function orgAndKeySums(db: Db, grain: string): Promise<{ org: string[]; keys: string[] }> {
  const line = (r: Record<string, unknown>) =>
    `${r.organization_id} ${new Date(r.bucket as string).toISOString()} ${r.outcome} ${Number(r.count)}`;
  const org = await db.query(`SELECT * FROM usage_org_${grain} ORDER BY organization_id, bucket, outcome`);
  const keys = await db.query(
    `SELECT organization_id, bucket, outcome, sum(count) AS count FROM usage_${grain}
      GROUP BY 1, 2, 3 ORDER BY organization_id, bucket, outcome`,
  );
  return { org: org.map(line), keys: keys.map(line) };
}

const backends = [
  // A real PostgreSQL server: needs DATABASE_URL (the CI run sets it; the default path has none).
  { name: 'PostgreSQL', skip: !process.env.DATABASE_URL, open: () => openTestDb() },
  { name: 'PGlite', skip: false, open: () => openTestDb({ forcePglite: true }) },
];

describe.each(backends)('usage writer on $name', ({ skip, open }) => {
  let db: Awaited<ReturnType<typeof open>>;
  beforeAll(async () => {
    if (!skip) db = await open();
  }, 120_000);
  afterAll(async () => {
    await db?.drop();
  });

  const clean = async () => {
    for (const t of ['usage_minute', 'usage_hour', 'usage_day'])
      await db.query(`TRUNCATE ${t}, usage_org_${t.slice(6)}`);
  };

  it.skipIf(skip)('writes minutes, hours and days of one flush in one transaction, and nothing when idle', async () => {
    await clean();
    const clock = new FakeClock(Date.UTC(2026, 11, 4, 10, 58, 30));
    await upkeepPartitions(db, clock.now(), RETENTION);
    let txs = 0;
    const counting = { tx: <T>(fn: Parameters<Db['tx']>[0]) => (txs++, db.tx(fn)) as Promise<T> };
    const w = new UsageWriter({ db: counting, clock });
    for (let i = 0; i < 5; i++) w.record('v2', ok(7), 200);
    w.record('v2', ok(7), 404);
    w.record('v2', unkeyed, 401);
    clock.advance(60_000); // 10:59
    for (let i = 0; i < 3; i++) w.record('v2', ok(7), 200);
    clock.advance(60_000); // 11:00: another hour
    w.record('v2', ok(8, 2), 200);
    expect(w.pendingRows).toBe(5);
    await w.flush();
    expect([w.writes, txs, w.pendingRows]).toEqual([1, 1, 0]);
    await w.flush();
    expect([w.writes, txs]).toEqual([1, 1]);

    const minute = await sums(db, 'usage_minute');
    const hour = await sums(db, 'usage_hour');
    const day = await sums(db, 'usage_day');
    const expected = { '7 forwarded_2xx': 8, '7 forwarded_4xx': 1, '0 refused_150002': 1, '8 forwarded_2xx': 1 };
    expect(minute.by).toEqual(expected);
    expect(hour.by).toEqual(expected);
    expect(day.by).toEqual(expected);
    expect([minute.rows, hour.rows, day.rows]).toEqual([5, 4, 4]);
    const [k8] = await db.query(`SELECT organization_id, bucket FROM usage_hour WHERE key_id = 8`);
    expect(k8.organization_id).toBe(2);
    expect(new Date(k8.bucket).toISOString()).toBe('2026-12-04T11:00:00.000Z');
    const [k0] = await db.query(`SELECT organization_id FROM usage_day WHERE key_id = 0`);
    expect(k0.organization_id).toBe(0);
    // The organizations' sums, in the same transaction: organization 1's key 7, 2's key 8, 0's unkeyed.
    const orgHour = await orgAndKeySums(db, 'hour');
    expect(orgHour.org).toEqual([
      '0 2026-12-04T10:00:00.000Z refused_150002 1',
      '1 2026-12-04T10:00:00.000Z forwarded_2xx 8',
      '1 2026-12-04T10:00:00.000Z forwarded_4xx 1',
      '2 2026-12-04T11:00:00.000Z forwarded_2xx 1',
    ]);
    for (const g of ['minute', 'day']) {
      const { org, keys } = await orgAndKeySums(db, g);
      expect(org).toEqual(keys);
    }
  });

  it.skipIf(skip)('two writers flushing the same keys at once add up exactly', async () => {
    await clean();
    const clock = new FakeClock(Date.UTC(2026, 11, 4, 12, 0, 0));
    await upkeepPartitions(db, clock.now(), RETENTION);
    const a = new UsageWriter({ db, clock });
    const b = new UsageWriter({ db, clock });
    const expected: Sums = {};
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 200; i++) {
        const key = 1 + (i % 17);
        const status = i % 5 === 0 ? 503 : 200;
        // Keys of three organizations, each written by both writers.
        (i % 2 ? a : b).record('v2', ok(key, 1 + (key % 3)), status);
        const o = `${key} ${status === 200 ? 'forwarded_2xx' : 'forwarded_5xx'}`;
        expected[o] = (expected[o] ?? 0) + 1;
      }
      clock.advance(20_000);
      await Promise.all([a.flush(), b.flush()]);
    }
    for (const t of ['usage_minute', 'usage_hour', 'usage_day']) expect((await sums(db, t)).by).toEqual(expected);
    for (const g of ['minute', 'hour', 'day']) {
      const { org, keys } = await orgAndKeySums(db, g);
      expect(org.length).toBeGreaterThanOrEqual(6);
      expect(org).toEqual(keys);
    }
    const [total] = await db.query(`SELECT sum(count)::int AS n FROM usage_org_day WHERE organization_id = 2`);
    const want = Object.entries(expected).filter(([k]) => Number(k.split(' ')[0]) % 3 === 1);
    expect(total.n).toBe(want.reduce((n, [, c]) => n + c, 0));
  });

  it.skipIf(skip)('a write with no partition for its rows makes them and writes', async () => {
    await clean();
    // Two days past anything the upkeep made: the writer makes the partitions itself.
    const clock = new FakeClock(Date.UTC(2027, 2, 1, 0, 0, 0));
    const w = new UsageWriter({ db, clock });
    w.record('v1', ok(3), 201);
    await w.flush();
    expect(w.writes).toBe(1);
    expect((await sums(db, 'usage_day')).by).toEqual({ '3 forwarded_2xx': 1 });
    expect(await partitionsOf(db, 'usage_minute')).toContain('usage_minute_p20270301');
    expect(await partitionsOf(db, 'usage_hour')).toContain('usage_hour_p202703');
  });

  it.skipIf(skip)('a failed flush keeps its counts for the next', async () => {
    await clean();
    const clock = new FakeClock(Date.UTC(2026, 11, 4, 12, 0, 0));
    let down = true;
    const flaky = {
      tx: <T>(fn: Parameters<Db['tx']>[0]): Promise<T> =>
        down ? Promise.reject(new Error('connection refused')) : (db.tx(fn) as Promise<T>),
    };
    const errors: string[] = [];
    const w = new UsageWriter({ db: flaky, clock, onError: (e) => errors.push(e.message) });
    w.record('v2', ok(5), 200);
    w.record('v2', ok(5), 200);
    await w.flush();
    expect(errors).toEqual(['connection refused']);
    w.record('v2', ok(5), 200);
    w.record('v2', ok(6, 3), 429 /* upstream's own 429 */);
    down = false;
    await w.flush();
    expect((await sums(db, 'usage_minute')).by).toEqual({ '5 forwarded_2xx': 3, '6 forwarded_4xx': 1 });
    const [k6] = await db.query(`SELECT organization_id FROM usage_minute WHERE key_id = 6`);
    expect(k6.organization_id).toBe(3);
  });
});

describe('usage writer without a database', () => {
  it('holds at most the cap of rows while writes fail, and counts and reports what it dropped', async () => {
    const clock = new FakeClock(Date.UTC(2026, 11, 4, 12, 0, 0));
    const drops: number[] = [];
    const down = { tx: () => Promise.reject(new Error('down')) };
    const w = new UsageWriter({ db: down, clock, maxPendingRows: 3, onDrop: (n) => drops.push(n) });
    for (let key = 1; key <= 5; key++) w.record('v2', ok(key), 200);
    w.record('v2', ok(1), 200); // a row already held still counts
    expect([w.pendingRows, w.dropped]).toEqual([3, 2]);
    await w.flush();
    expect(drops).toEqual([2]);
    // Put back after the failure: still three rows, nothing more lost.
    expect([w.pendingRows, w.dropped]).toEqual([3, 2]);
    clock.advance(60_000);
    w.record('v2', ok(1), 200); // a new minute is a new row: over the cap
    expect(w.dropped).toBe(3);
  });

  it('counts with no allocation beyond the map entry: the same minute and key reuse the entry', () => {
    const clock = new FakeClock(Date.UTC(2026, 11, 4, 12, 0, 0));
    const w = new UsageWriter({ db: { tx: () => Promise.reject(new Error('unused')) }, clock });
    for (let i = 0; i < 1000; i++) w.record('v2', ok(9), 200);
    expect(w.pendingRows).toBe(1);
  });
});

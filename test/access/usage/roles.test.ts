// The usage history kept by the programs' role that owns nothing (deploy/README.md, Two database roles):
// it makes partitions ahead and on a write that finds none, writes, and drops what is past retention,
// through the functions of migration 100_usage.sql; a role without INSERT on the history may do none of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { migrate, openDb, recordOwnerSettings, type Db } from '../../../src/db/index.js';
import { upkeepPartitions } from '../../../src/access/usage/partitions.js';
import { UsageWriter } from '../../../src/access/usage/writer.js';
import { openRoleSchema, type RoleSchema } from '../../helpers/db.js';

const DAY = 86_400_000;
const RETENTION = { minuteDays: 7, hourDays: 90, dayDays: 400 };

// Roles and grants need a real PostgreSQL and its superuser: DATABASE_URL (PGlite has one role).
describe.skipIf(!process.env.DATABASE_URL)('usage history as the role that owns nothing', () => {
  let s: RoleSchema;
  let app: Db;
  beforeAll(async () => {
    s = await openRoleSchema(process.env.DATABASE_URL!);
    const owner = await openDb({ databaseUrl: s.ownerUrl });
    await migrate(owner);
    await recordOwnerSettings(owner, { appRole: s.app });
    await owner.close();
    app = await openDb({ databaseUrl: s.appUrl });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await s?.drop();
  });

  it('makes partitions, writes, and drops past retention', async () => {
    const now = Date.UTC(2026, 11, 4, 12);
    expect(await upkeepPartitions(app, now, RETENTION)).toEqual({ created: 16, dropped: [] });
    // Ten days on: no partition yet for that day; the write makes it.
    const w = new UsageWriter({ db: app, clock: { now: () => now + 10 * DAY } });
    w.record('v2', { route: 'r', code: null, organizationId: 1, keyId: 5 }, 200);
    await w.flush();
    expect(w.writes).toBe(1);
    expect(await app.query('SELECT key_id, outcome, count FROM usage_day')).toEqual([
      { key_id: 5, outcome: 'forwarded_2xx', count: 1 },
    ]);
    expect(await app.query('SELECT organization_id, outcome, count FROM usage_org_day')).toEqual([
      { organization_id: 1, outcome: 'forwarded_2xx', count: 1 },
    ]);
    const later = await upkeepPartitions(app, now + 30 * DAY, RETENTION);
    expect(later?.dropped).toContain('usage_minute_p20261204');
    expect(later?.dropped).toContain('usage_minute_p20261214');
    expect(later?.dropped).toContain('usage_org_minute_p20261214');
  });

  it('refuses a role that may not write the history', async () => {
    const other = `kg_other_${s.schema.slice(2)}`;
    const admin = new pg.Client({ connectionString: s.superUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE ${other} LOGIN; GRANT USAGE ON SCHEMA ${s.schema} TO ${other}`);
      const url = new URL(s.appUrl);
      url.username = other;
      const db = await openDb({ databaseUrl: url.toString() });
      try {
        await expect(db.query(`SELECT keygate_usage_drop('usage_minute', now())`)).rejects.toMatchObject({
          code: '42501',
        });
        await expect(db.query(`SELECT keygate_usage_partition('usage_minute', now())`)).rejects.toMatchObject({
          code: '42501',
        });
      } finally {
        await db.close();
      }
    } finally {
      await admin.query(`DROP OWNED BY ${other}; DROP ROLE ${other}`).catch(() => {});
      await admin.end();
    }
  });
});

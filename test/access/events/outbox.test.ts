// The outbox (docs/events.md): each key and limits change writes its event in its own transaction, with a
// delivery per endpoint subscribed to the type; a change that fails or rolls back tells nothing; payloads
// carry ids, names and hints, never a secret or a hash. The expiry scan tells each key's expiry once (per
// expiry instant), one instance at a time; the quota's thresholds are told once per organization, month
// and threshold, whatever number of processes hear the crossing.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openTestDb } from '../../helpers/db.js';
import { FakeClock } from '../../helpers/stack.js';
import { baseSeed, ALL_SCOPES } from '../../fixtures/seed.js';
import { applySeed, parseSeed } from '../../../src/backend/seed.js';
import { getPepper } from '../../../src/access/pepper.js';
import { loadPlans } from '../../../src/config/plans.js';
import { serviceContext, ServiceError, type ServiceContext } from '../../../src/access/service/context.js';
import { createKey, revokeKey, rotateKey, updateKey } from '../../../src/access/service/keys.js';
import { setKeyLimits, setOrganizationLimits } from '../../../src/access/service/limits.js';
import { setPlan } from '../../../src/access/service/organizations.js';
import { createEndpoint } from '../../../src/access/events/endpoints.js';
import { scanExpiries } from '../../../src/access/events/scan.js';
import { tryScanLock } from '../../../src/access/events/queries.js';
import { QuotaThresholds } from '../../../src/access/events/thresholds.js';
import type { Db } from '../../../src/db/types.js';

let db: Db & { drop(): Promise<void> };
const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 0));
let ctx: ServiceContext;
const DAY = 86_400_000;

beforeAll(async () => {
  db = await openTestDb();
  await applySeed(db, parseSeed(baseSeed()));
  const plans = loadPlans('config/plans.json');
  ctx = serviceContext(
    {
      db,
      clock,
      pepper: await getPepper(db),
      plans: () => plans,
      scopes: () => Object.fromEntries(ALL_SCOPES.map((s) => [s, 'VIEWER' as const])),
      accessChanged: async () => {},
    },
    { kind: 'admin-token', id: '7', name: 'ops' },
  );
});
afterAll(async () => db?.drop());

async function events(type?: string) {
  return db.query(
    `SELECT e.id, e.type, e.organization_id, e.payload, e.mark,
            (SELECT count(*)::int FROM webhook_deliveries d WHERE d.event_id = e.id) AS deliveries
       FROM events e WHERE $1::text IS NULL OR e.type = $1 ORDER BY e.id`,
    [type ?? null],
  );
}

beforeEach(async () => {
  await db.query(`DELETE FROM events`);
});

describe('key changes', () => {
  it('create, rotate and revoke each write one event, delivered to the endpoints subscribed to its type', async () => {
    const all = await createEndpoint(ctx, { url: 'http://127.0.0.1:9/all' });
    const revokedOnly = await createEndpoint(ctx, { url: 'http://127.0.0.1:9/revoked', eventTypes: ['key.revoked'] });
    const { key, secret } = await createKey(ctx, { type: 'workspace', workspaceId: 100, name: 'evt', scopes: [] });
    const { secret: rotated } = await rotateKey(ctx, key.id, { graceMs: 60_000 });
    await revokeKey(ctx, key.id);
    await revokeKey(ctx, key.id); // already revoked: nothing changes, nothing told

    const rows = await events();
    expect(rows.map((r) => [r.type, r.deliveries])).toEqual([
      ['key.created', 1],
      ['key.rotated', 1],
      ['key.revoked', 2],
    ]);
    expect(rows[0].payload).toMatchObject({
      type: 'key.created',
      timestamp: new Date(clock.now()).toISOString(),
      data: {
        key: { id: key.id, organizationId: 1, workspaceId: 100, name: 'evt', hint: key.hint, status: 'active' },
        actor: { kind: 'admin-token', id: '7', name: 'ops' },
      },
    });
    expect(rows[1].payload.data.previousHint).toBe(key.hint);
    expect(rows[1].payload.data.key.hint).not.toBe(key.hint);
    expect(rows[2].payload.data.revokedAt).toBe(new Date(clock.now()).toISOString());
    const text = JSON.stringify(rows);
    for (const s of [secret, rotated]) expect(text).not.toContain(s);
    expect(text).not.toMatch(/hash/i);
    const byEndpoint = await db.query(
      `SELECT endpoint_id, count(*)::int AS n FROM webhook_deliveries GROUP BY endpoint_id ORDER BY endpoint_id`,
    );
    expect(byEndpoint).toContainEqual({ endpoint_id: all.endpoint.id, n: 3 });
    expect(byEndpoint).toContainEqual({ endpoint_id: revokedOnly.endpoint.id, n: 1 });
    await db.query(`UPDATE webhook_endpoints SET enabled = false`);
  });

  it('a refused change tells nothing', async () => {
    const { key } = await createKey(ctx, { type: 'workspace', workspaceId: 100, name: 'doomed', scopes: [] });
    await revokeKey(ctx, key.id);
    await db.query(`DELETE FROM events`);
    await expect(rotateKey(ctx, key.id)).rejects.toBeInstanceOf(ServiceError);
    await expect(createKey(ctx, { type: 'workspace', workspaceId: 999_999, name: 'x', scopes: [] })).rejects.toThrow();
    expect(await events()).toEqual([]);
  });

  it('the event is written in the transaction of the change: a change that does not commit leaves no event', async () => {
    // The same database, whose every transaction is refused at its end, after the operation wrote in it.
    const refusing: Db = Object.create(db, {
      tx: {
        value: <T>(fn: Parameters<Db['tx']>[0]) =>
          db.tx(async (q) => {
            await fn(q);
            throw new Error('the commit is refused');
          }) as Promise<T>,
      },
    });
    const c = { ...ctx, db: refusing };
    await expect(
      createKey(c, { type: 'workspace', workspaceId: 100, name: 'rolled back', scopes: [] }),
    ).rejects.toThrow('the commit is refused');
    await expect(setOrganizationLimits(c, 1, { read: 3 })).rejects.toThrow('the commit is refused');
    expect(await events()).toEqual([]);
    expect(await db.query(`SELECT 1 FROM api_keys WHERE name = 'rolled back'`)).toEqual([]);
  });
});

describe('limits.changed', () => {
  it("is told for a key's and an organization's limits and a plan change, not for a change to the same", async () => {
    const { key } = await createKey(ctx, { type: 'workspace', workspaceId: 100, name: 'limited', scopes: [] });
    await db.query(`DELETE FROM events`);
    await setKeyLimits(ctx, key.id, { read: 5 });
    await setKeyLimits(ctx, key.id, { read: 5 });
    await setOrganizationLimits(ctx, 2, { monthlyQuota: 1000 });
    await setPlan(ctx, 2, 'growth');
    await setPlan(ctx, 2, 'growth');
    const rows = await events('limits.changed');
    expect(rows.map((r) => [r.organization_id, r.payload.data.keyId])).toEqual([
      [1, key.id],
      [2, null],
      [2, null],
    ]);
    expect(rows[0].payload.data).toMatchObject({
      before: { overrides: { read: null } },
      after: { overrides: { read: 5 }, effective: { read: 5 } },
    });
    expect(rows[1].payload.data.after.effective.monthlyQuota).toBe(1000);
    expect(rows[2].payload.data).toMatchObject({ before: { plan: 'free' }, after: { plan: 'growth' } });
  });
});

describe('the expiry scan', () => {
  const opts = { expiringDays: 7, retentionDays: 90 };

  it('tells key.expiring N days ahead and key.expired once each, again only for a new expiry', async () => {
    const now = clock.now();
    const { key } = await createKey(ctx, {
      type: 'workspace',
      workspaceId: 100,
      name: 'short-lived',
      scopes: [],
      expiresAt: new Date(now + 10 * DAY),
    });
    const far = await createKey(ctx, {
      type: 'workspace',
      workspaceId: 100,
      name: 'long-lived',
      scopes: [],
      expiresAt: new Date(now + 30 * DAY),
    });
    await db.query(`DELETE FROM events`);
    const mine = async (type: string) =>
      (await events(type)).filter((r) => r.payload.data.key.id === key.id || r.payload.data.key.id === far.key.id);

    await scanExpiries(db, clock, opts);
    expect(await mine('key.expiring')).toEqual([]);
    clock.advance(3 * DAY + 1000); // 7 days less a second before the expiry
    await scanExpiries(db, clock, opts);
    await scanExpiries(db, clock, opts);
    const expiring = await mine('key.expiring');
    expect(expiring).toHaveLength(1);
    expect(expiring[0].payload.data).toMatchObject({
      key: { id: key.id, name: 'short-lived' },
      expiresAt: key.expiresAt,
    });

    // A new expiry is warned of again; the old one's warning stays the only one for it.
    const later = new Date(now + 9 * DAY);
    await updateKey(ctx, key.id, { expiresAt: later });
    await scanExpiries(db, clock, opts);
    expect((await mine('key.expiring')).map((r) => r.payload.data.expiresAt)).toEqual([
      key.expiresAt,
      later.toISOString(),
    ]);

    clock.advance(10 * DAY);
    await scanExpiries(db, clock, opts);
    await scanExpiries(db, clock, opts);
    const expired = await mine('key.expired');
    expect(expired).toHaveLength(1);
    expect(expired[0].payload.data).toMatchObject({
      key: { id: key.id, status: 'expired' },
      expiredAt: later.toISOString(),
    });
    clock.t = now;
  });

  it('runs on one instance at a time: a scan while another holds the lock does nothing', async () => {
    let during: unknown = 'not run';
    await db.tx(async (q) => {
      expect(await tryScanLock(q)).toBe(true);
      during = await scanExpiries(await openSecond(), clock, opts);
    });
    // PGlite has one connection: a second scan there would wait for this transaction, so it runs only on PostgreSQL.
    if (during !== 'skipped') expect(during).toBeNull();
  });
});

let second: (Db & { drop(): Promise<void> }) | null = null;
/** Another connection to the same schema, as another instance has; PGlite has none. */
async function openSecond(): Promise<Db> {
  if (!process.env.DATABASE_URL) return { tx: async () => 'skipped' } as unknown as Db;
  const { openDb } = await import('../../../src/db/index.js');
  second ??= Object.assign(await openDb({ databaseUrl: process.env.DATABASE_URL, schema: db.schema }), {
    drop: async () => {},
  });
  return second;
}
afterAll(async () => second?.close());

describe('quota thresholds', () => {
  it('two processes hearing the same crossings tell each threshold once per organization and month', async () => {
    const log = { warn: () => {} };
    const a = new QuotaThresholds({ db, thresholds: [80, 100], log });
    const b = new QuotaThresholds({ db, thresholds: [100, 80], log });
    const nov = Date.UTC(2026, 10, 22);
    const state = (used: number) => ({ limit: 10, used, remaining: Math.max(0, 10 - used), reset: 0 });
    for (const used of [1, 7, 8, 8, 9]) for (const p of [a, b]) p.hear(1, state(used), nov);
    await Promise.all([a.close(), b.close()]);
    for (const used of [10, 11, 12]) for (const p of [b, a]) p.hear(1, state(used), nov);
    // A jump past both at once (another organization) tells both.
    a.hear(2, state(10), nov);
    await Promise.all([a.close(), b.close()]);
    // December: the thresholds again.
    const dec = Date.UTC(2026, 11, 1, 0, 0, 1);
    for (const p of [a, b]) p.hear(1, state(9), dec);
    await Promise.all([a.close(), b.close()]);

    const rows = (await events('quota.threshold')).map((r) => [
      r.organization_id,
      r.payload.data.month,
      r.payload.data.threshold,
    ]);
    expect(rows.sort()).toEqual(
      [
        [1, '2026-11', 80],
        [1, '2026-11', 100],
        [2, '2026-11', 80],
        [2, '2026-11', 100],
        [1, '2026-12', 80],
      ].sort(),
    );
    const [first] = await events('quota.threshold');
    expect(first.payload.data).toMatchObject({ organization: { id: 1, name: expect.any(String) }, quota: 10 });
  });
});

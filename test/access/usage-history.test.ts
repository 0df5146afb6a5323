// The usage history as the service layer reads it (src/access/service/usage-history.ts), over rows
// inserted as the gateways write them: every bucket of the range present, zero-filled, from the
// granularity's own table; admitted and refused as the outcomes say; the limits of a reading refused with a
// message that says what to change; keys and organizations not there, or not the reader's, not found.
// Then the billing month per key (families, pages cut inside a key) and the console's overview and search.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { FakeClock } from '../helpers/stack.js';
import { baseSeed, ALL_SCOPES } from '../fixtures/seed.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { getPepper } from '../../src/access/pepper.js';
import { loadPlans } from '../../src/config/plans.js';
import { serviceContext, ServiceError, type Actor, type ServiceContext } from '../../src/access/service/context.js';
import {
  EXPORT_COLUMNS,
  familyOf,
  keyUsageHistory,
  monthUsageRows,
  organizationUsageHistory,
  organizationsWithQuota,
  overviewFacts,
  searchAccess,
  type ExportRow,
} from '../../src/access/service/usage-history.js';
import { updateKey } from '../../src/access/service/keys.js';
import { setOrganizationLimits } from '../../src/access/service/limits.js';
import type { Db } from '../../src/db/types.js';
import { clearUsage, ensureUsageTables, insertAnswers, insertUsage } from './usage-history-rows.js';

let db: Db & { drop(): Promise<void> };
// 2026-11-22T12:30:00Z
const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 30, 0));
let base: Omit<ServiceContext, 'actor' | 'requestId'>;
const as = (actor: Actor) => serviceContext(base, actor);
const cli = () => as({ kind: 'cli', osUser: 'alice' });

beforeAll(async () => {
  db = await openTestDb();
  await applySeed(db, parseSeed(baseSeed()));
  await ensureUsageTables(db);
  const plans = loadPlans('config/plans.json');
  base = {
    db,
    clock,
    pepper: await getPepper(db),
    plans: () => plans,
    scopes: () => Object.fromEntries(ALL_SCOPES.map((s) => [s, 'VIEWER' as const])),
    accessChanged: async () => {},
  };
});
afterAll(async () => db?.drop());
beforeEach(async () => clearUsage(db));

async function refusal(p: Promise<unknown>): Promise<ServiceError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

describe('a key and an organization by hour, the default', () => {
  it('the last 24 hours, zero-filled, the current hour last; the hour table read, the minutes summed in it', async () => {
    await insertAnswers(db, [
      { at: '2026-11-22T11:30Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 5 },
      { at: '2026-11-22T12:05Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 2 },
      { at: '2026-11-22T12:20Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 3 },
      { at: '2026-11-22T12:20Z', org: 1, key: 1000, outcome: 'limited_key', count: 1 },
      { at: '2026-11-22T12:21Z', org: 1, key: 1000, outcome: 'refused_150003', count: 4 },
      // Another key of the organization, another organization, and before the range.
      { at: '2026-11-22T11:00Z', org: 1, key: 1001, outcome: 'forwarded_5xx', count: 7 },
      { at: '2026-11-22T11:00Z', org: 2, key: 2000, outcome: 'forwarded_2xx', count: 100 },
      { at: '2026-11-21T12:59Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 1000 },
    ]);
    // The reading takes the hour table alone: a row there only proves it reads no other.
    await insertUsage(db, [
      { table: 'usage_minute', at: '2026-11-22T10:00Z', org: 1, key: 1000, outcome: 'answered', count: 50 },
    ]);
    const h = await keyUsageHistory(cli(), 1000);
    expect(h).toMatchObject({
      keyId: 1000,
      organizationId: 1,
      granularity: 'hour',
      from: '2026-11-21T13:00:00.000Z',
      to: '2026-11-22T13:00:00.000Z',
    });
    expect(h.outcomes).toEqual([
      'forwarded_2xx',
      'forwarded_3xx',
      'forwarded_4xx',
      'forwarded_5xx',
      'answered',
      'limited_key',
      'limited_address',
      'limited_month',
      'refused_150003',
    ]);
    expect(h.buckets).toHaveLength(24);
    expect(h.buckets[0].start).toBe('2026-11-21T13:00:00.000Z');
    expect(h.buckets[0]).toMatchObject({ admitted: 0, refused: 0 });
    expect(Object.values(h.buckets[0].outcomes)).toEqual(Array(9).fill(0));
    expect(h.buckets[21]).toMatchObject({ start: '2026-11-22T10:00:00.000Z', admitted: 0, refused: 0 });
    expect(h.buckets[22]).toMatchObject({ start: '2026-11-22T11:00:00.000Z', admitted: 5, refused: 0 });
    expect(h.buckets[23]).toMatchObject({ start: '2026-11-22T12:00:00.000Z', admitted: 5, refused: 5 });
    expect(h.buckets[23].outcomes).toMatchObject({ forwarded_2xx: 5, limited_key: 1, refused_150003: 4 });
    expect(h.totals).toMatchObject({ admitted: 10, refused: 5 });

    const org = await organizationUsageHistory(cli(), 1);
    expect(org.keyId).toBeUndefined();
    expect(org.buckets[22]).toMatchObject({ admitted: 12, refused: 0 });
    expect(org.buckets[22].outcomes).toMatchObject({ forwarded_2xx: 5, forwarded_5xx: 7 });
    expect(org.totals).toMatchObject({ admitted: 17, refused: 5 });
  });

  it('by minute and by day: the range widened to whole buckets (UTC days)', async () => {
    await insertAnswers(db, [
      { at: '2026-11-20T05:10Z', org: 1, key: 1000, outcome: 'answered', count: 40 },
      { at: '2026-11-20T23:59:59Z', org: 1, key: 1000, outcome: 'answered', count: 1 },
      { at: '2026-11-21T00:00Z', org: 1, key: 1000, outcome: 'limited_month', count: 2 },
      { at: '2026-11-22T12:29:59Z', org: 1, key: 1000, outcome: 'forwarded_4xx', count: 1 },
    ]);
    const days = await keyUsageHistory(cli(), 1000, {
      granularity: 'day',
      from: new Date('2026-11-20T08:00Z'),
      to: new Date('2026-11-22T01:00Z'),
    });
    expect(days.buckets.map((b) => [b.start, b.admitted, b.refused])).toEqual([
      ['2026-11-20T00:00:00.000Z', 41, 0],
      ['2026-11-21T00:00:00.000Z', 0, 2],
      ['2026-11-22T00:00:00.000Z', 1, 0],
    ]);
    const minutes = await keyUsageHistory(cli(), 1000, {
      granularity: 'minute',
      from: new Date('2026-11-22T12:28:30Z'),
      to: new Date('2026-11-22T12:30:00Z'),
    });
    expect(minutes.from).toBe('2026-11-22T12:28:00.000Z');
    expect(minutes.buckets.map((b) => [b.start.slice(11, 16), b.outcomes.forwarded_4xx])).toEqual([
      ['12:28', 0],
      ['12:29', 1],
    ]);
  });

  it('refuses a reading over its bounds, reversed or empty, saying what to change', async () => {
    const cases: [Parameters<typeof keyUsageHistory>[2], RegExp][] = [
      [
        { granularity: 'minute', from: new Date('2026-11-21T12:00Z'), to: new Date('2026-11-22T12:01Z') },
        /at most 1440 buckets.*is 1441: narrow from and to, or take a coarser granularity/,
      ],
      [{ granularity: 'hour', from: new Date('2026-01-01T00:00Z'), to: new Date('2026-11-22T00:00Z') }, /at most 2000/],
      [{ granularity: 'day', from: new Date('2025-01-01T00:00Z') }, /at most 400 buckets/],
      [{ from: new Date('2026-11-22T12:00Z'), to: new Date('2026-11-22T12:00Z') }, /^from must be before to$/],
      [{ from: new Date('2026-11-22T13:00Z'), to: new Date('2026-11-22T12:00Z') }, /^from must be before to$/],
      [{ from: new Date('nope') }, /^from must be an instant$/],
      [{ granularity: 'week' as 'day' }, /^granularity must be one of minute, hour, day$/],
    ];
    for (const [q, message] of cases) {
      const err = await refusal(keyUsageHistory(cli(), 1000, q));
      expect([err.kind, err.message]).toEqual(['invalid', expect.stringMatching(message)]);
      expect((await refusal(organizationUsageHistory(cli(), 1, q))).kind).toBe('invalid');
    }
    // 24 hours of minutes is the most, and the default span.
    const day = await keyUsageHistory(cli(), 1000, { granularity: 'minute' });
    expect(day.buckets).toHaveLength(1440);
    expect(day.buckets[1439].start).toBe('2026-11-22T12:30:00.000Z');
  });

  it('not found: no such key or organization, a key of another organization, another organization for a user', async () => {
    expect((await refusal(keyUsageHistory(cli(), 999999))).kind).toBe('not_found');
    expect((await refusal(organizationUsageHistory(cli(), 999999))).kind).toBe('not_found');
    const foreign = await refusal(keyUsageHistory(cli(), 2000, {}, { organizationId: 1 }));
    expect([foreign.kind, foreign.message]).toEqual(['not_found', 'no key 2000 in organization 1']);
    expect((await keyUsageHistory(cli(), 2000, {}, { organizationId: 2 })).organizationId).toBe(2);
    // A user of organization 2 (owner 20): organization 1 and its keys look absent.
    const user = as({ kind: 'user', id: 20 });
    expect((await refusal(keyUsageHistory(user, 1000))).kind).toBe('not_found');
    expect((await refusal(organizationUsageHistory(user, 1))).kind).toBe('not_found');
    expect((await organizationUsageHistory(user, 2)).organizationId).toBe(2);
  });
});

describe('the billing month', () => {
  const all = async (it: AsyncIterable<ExportRow>) => {
    const out: ExportRow[] = [];
    for await (const r of it) out.push(r);
    return out;
  };

  it('one row per key with counts, in organization then key order, families summing to admitted and refused', async () => {
    await insertUsage(db, [
      { table: 'usage_day', at: '2026-11-01T00:00Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 10 },
      { table: 'usage_day', at: '2026-11-02T00:00Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 5 },
      { table: 'usage_day', at: '2026-11-02T00:00Z', org: 1, key: 1000, outcome: 'refused_150002', count: 2 },
      { table: 'usage_day', at: '2026-11-02T00:00Z', org: 1, key: 1000, outcome: 'refused_150006', count: 1 },
      { table: 'usage_day', at: '2026-11-02T00:00Z', org: 1, key: 1000, outcome: 'refused_150004', count: 3 },
      {
        table: 'usage_day',
        at: '2026-11-02T00:00Z',
        org: 1,
        key: 1000,
        outcome: 'refused_payload_too_large',
        count: 4,
      },
      { table: 'usage_day', at: '2026-11-02T00:00Z', org: 1, key: 1000, outcome: 'limited_address', count: 6 },
      { table: 'usage_day', at: '2026-11-22T00:00Z', org: 1, key: 1001, outcome: 'answered', count: 8 },
      { table: 'usage_day', at: '2026-11-05T00:00Z', org: 2, key: 2000, outcome: 'forwarded_5xx', count: 9 },
      // Not billed: no key resolved, or another month.
      { table: 'usage_day', at: '2026-11-05T00:00Z', org: 0, key: 0, outcome: 'refused_150002', count: 50 },
      { table: 'usage_day', at: '2026-10-31T00:00Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 70 },
      { table: 'usage_day', at: '2026-12-01T00:00Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 70 },
    ]);
    const rows = await all(await monthUsageRows(cli(), { month: '2026-11' }));
    expect(rows.map((r) => [r.organization_id, r.key_id])).toEqual([
      [1, 1000],
      [1, 1001],
      [2, 2000],
    ]);
    expect(Object.keys(rows[0])).toEqual([...EXPORT_COLUMNS]);
    expect(rows[0]).toEqual({
      month: '2026-11',
      organization_id: 1,
      organization_name: 'Acme',
      key_id: 1000,
      key_name: 'ws admin',
      key_hint: 'svc_ws_WsAd…',
      admitted: 15,
      refused: 16,
      forwarded_2xx: 15,
      forwarded_3xx: 0,
      forwarded_4xx: 0,
      forwarded_5xx: 0,
      answered: 0,
      limited_key: 0,
      limited_address: 6,
      limited_month: 0,
      refused_authentication: 3,
      refused_authorization: 3,
      refused_other: 4,
    });
    expect(rows[1]).toMatchObject({ admitted: 8, answered: 8 });
    expect(
      (await all(await monthUsageRows(cli(), { month: '2026-11', organizationId: 2 }))).map((r) => r.key_id),
    ).toEqual([2000]);
    expect(await all(await monthUsageRows(cli(), { month: '2026-09' }))).toEqual([]);
  });

  it('pages cut inside a key carry it whole to the next page', async () => {
    const outcomes = ['forwarded_2xx', 'forwarded_4xx', 'limited_key', 'refused_150003'];
    const keys = [1000, 1001, 1002, 1003, 1010];
    await insertUsage(
      db,
      keys.flatMap((key, i) =>
        outcomes.map((outcome, j) => ({
          table: 'usage_day' as const,
          at: '2026-11-03T00:00Z',
          org: 1,
          key,
          outcome,
          count: 1 + i + j,
        })),
      ),
    );
    const whole = await all(await monthUsageRows(cli(), { month: '2026-11' }));
    for (const pageRows of [5, 6, 7, 20]) {
      const paged = await all(await monthUsageRows(cli(), { month: '2026-11', pageRows }));
      expect(paged, `pages of ${pageRows}`).toEqual(whole);
    }
    expect(whole.map((r) => r.key_id)).toEqual(keys);
    expect(whole[4]).toMatchObject({ admitted: 5 + 6, refused: 7 + 8, refused_authorization: 8 });
  });

  it('refuses a month that is not YYYY-MM, an organization not there, and a user actor', async () => {
    for (const month of ['2026-13', '2026-1', '26-11', '2026-11-01', '1999-12', ''])
      expect((await refusal(monthUsageRows(cli(), { month }))).message).toBe('month must be YYYY-MM, e.g. 2026-11');
    expect((await refusal(monthUsageRows(cli(), { month: '2026-11', organizationId: 999999 }))).kind).toBe('not_found');
    expect((await refusal(monthUsageRows(as({ kind: 'user', id: 10 }), { month: '2026-11' }))).kind).toBe('forbidden');
  });

  it('families by the error table: 401 and the cooldown authentication, 403 authorization, any other code other', () => {
    expect(familyOf('refused_150001')).toBe('refused_authentication');
    expect(familyOf('refused_unauthorized')).toBe('refused_authentication');
    expect(familyOf('refused_too_many_failed_attempts')).toBe('refused_authentication');
    expect(familyOf('refused_040006')).toBe('refused_authorization');
    expect(familyOf('refused_request_timeout')).toBe('refused_other');
    expect(familyOf('refused_no_such_code')).toBe('refused_other');
    expect(familyOf('limited_month')).toBe('limited_month');
    expect(familyOf('answered')).toBe('answered');
  });
});

describe("the console's overview and search", () => {
  it("counts, today's traffic from the history, keys expiring within the window, organizations with a quota", async () => {
    await insertAnswers(db, [
      { at: '2026-11-22T00:00Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 3 },
      { at: '2026-11-22T12:29Z', org: 0, key: 0, outcome: 'refused_150002', count: 2 },
      { at: '2026-11-21T23:59Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 99 },
    ]);
    await updateKey(cli(), 1001, { expiresAt: new Date('2026-11-25T00:00Z') });
    await updateKey(cli(), 1002, { expiresAt: new Date('2026-12-25T00:00Z') });
    const facts = await overviewFacts(cli(), { expiringWithinMs: 7 * 86_400_000, expiringLimit: 50 });
    expect(facts.organizations).toBe(3);
    expect(facts.keys.total).toBeGreaterThanOrEqual(11);
    expect(facts.keys.active + facts.keys.expired + facts.keys.revoked).toBe(facts.keys.total);
    expect(facts.today).toMatchObject({ date: '2026-11-22', admitted: 3, refused: 2 });
    expect(facts.expiringKeys.map((k) => [k.id, k.organizationName, k.expiresAt])).toEqual([
      [1001, 'Acme', '2026-11-25T00:00:00.000Z'],
    ]);

    await setOrganizationLimits(cli(), 2, { monthlyQuota: 1000 });
    expect(await organizationsWithQuota(cli())).toEqual([{ id: 2, name: 'Beta', monthlyQuota: 1000 }]);
  });

  it("search: by id, any part of a name in any case, a hint or a secret's start; at most 20 each", async () => {
    expect((await searchAccess(cli(), '1')).organizations.map((o) => o.id)).toEqual([1]);
    expect((await searchAccess(cli(), 'acm')).organizations.map((o) => o.name)).toEqual(['Acme']);
    const byName = await searchAccess(cli(), 'WS ');
    expect(byName.keys.map((k) => k.name)).toEqual([
      'beta ws',
      'gamma ws',
      'ws admin',
      'ws none',
      'ws other',
      'ws viewer',
    ]);
    expect((await searchAccess(cli(), '1003')).keys[0]).toMatchObject({ id: 1003, organizationName: 'Acme' });
    // A secret's start finds its key by the hint, and the hint itself does.
    expect((await searchAccess(cli(), 'svc_ws_Org2Ws0000')).keys.map((k) => k.id)).toEqual([2000]);
    expect((await searchAccess(cli(), 'WsOt')).keys.map((k) => k.id)).toEqual([1003]);
    // LIKE's own characters are taken literally.
    expect(await searchAccess(cli(), '%')).toEqual({ organizations: [], keys: [] });
    expect(await searchAccess(cli(), '_')).toMatchObject({ organizations: [] });
    for (const q of ['', '   ', 'x'.repeat(101), 'a\u0000b'])
      expect((await refusal(searchAccess(cli(), q))).kind).toBe('invalid');
    // Every organization's names are for operators, not for a user of one of them.
    const user = as({ kind: 'user', id: 10 });
    expect((await refusal(searchAccess(user, 'acme'))).kind).toBe('forbidden');
    expect((await refusal(overviewFacts(user, { expiringWithinMs: 1, expiringLimit: 1 }))).kind).toBe('forbidden');
    expect((await refusal(organizationsWithQuota(user))).kind).toBe('forbidden');
  });
});

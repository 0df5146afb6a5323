// Per-customer limits and monthly quotas through the real gateway, on two instances sharing one Redis
// and one database (each with its own principal cache and Redis connection, as two processes): an
// override made through one instance's backend applies to the other's very next request; the monthly
// quota admits exactly its number of requests under a concurrent burst spread over both; every answer
// of an organization with a quota carries the third policy; the quota adds no Redis round trip.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Res, type Stack } from '../helpers/stack.js';
import { ALL_SCOPES } from '../fixtures/seed.js';
import { createRedisStores, type RedisConnection } from '../../src/limits/redis/index.js';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import { clusterNodes, haveRedis, testRedisClient } from '../helpers/redis.js';
import type { SharedStores } from '../../src/limits/types.js';
import { loadPlans } from '../../src/config/plans.js';
import { setKeyLimits, setOrganizationLimits } from '../../src/access/service/limits.js';
import type { ServiceContext } from '../../src/access/service/context.js';
import { testSecret } from '../helpers/keys.js';

// 2026-11-22T12:00Z: the month (30 days) turns at 2026-12-01T00:00Z.
const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 0));
const DECEMBER = Date.UTC(2026, 11, 1);
const NOVEMBER_SECONDS = 30 * 86_400;

const Q = {
  ws: testSecret('svc_ws_', 'QuotaWs'),
  ws2: testSecret('svc_ws_', 'QuotaWsTwo'),
  noScope: testSecret('svc_ws_', 'QuotaNoScope'),
  partner: testSecret('svc_v1_', 'QuotaPartner'),
};

let a: Stack;
let b: Stack;
let redis: RedisConnection | undefined;
let sent = 0;
const extraStores: SharedStores[] = [];

/** Both instances on one Redis prefix; a's connection counts the commands it sends. */
function sharedStores(prefix: string): { a: SharedStores; b: SharedStores } {
  if (!haveRedis()) {
    const one = createMemoryStores({ clock });
    return { a: one, b: one };
  }
  redis = testRedisClient();
  const original = redis.sendCommand.bind(redis);
  (redis as unknown as { sendCommand: typeof original }).sendCommand = ((cmd: Parameters<typeof original>[0]) => {
    sent++;
    return original(cmd);
  }) as typeof original;
  const sa = createRedisStores({ redis, prefix, clock });
  const sb = createRedisStores({ redis: testRedisClient(), prefix, clock });
  extraStores.push(sa, sb);
  return { a: sa, b: sb };
}

const plans = loadPlans('config/plans.json');
// The service layer as an operator's command uses it (the pepper and scopes play no part in limits).
const limitsCtx = (): ServiceContext => ({
  db: a.db,
  actor: { kind: 'cli', osUser: 'quota-test' },
  clock,
  pepper: '',
  scopes: () => ({}),
  plans: () => plans,
  accessChanged: async (org: number) => void (await a.stores.versions.bump(org)),
});

beforeAll(async () => {
  const stores = sharedStores(`q${randomBytes(4).toString('hex')}:`);
  a = await startStack({
    clock,
    stores: stores.a,
    extra: {
      organizations: [{ id: 4, name: 'Quota Co', plan: 'growth', apiAccess: true, paused: false, warmupCap: null }],
      users: [{ id: 40, organizationId: 4, email: 'owner@quota.test', orgRole: 'OWNER' }],
      workspaces: [{ id: 400, organizationId: 4, name: 'Quota main', dailyWarmupBudget: 0 }],
      memberships: [{ workspaceId: 400, userId: 40, role: 'OWNER' }],
      apiKeys: [
        {
          id: 4000,
          secret: Q.ws,
          name: 'quota ws',
          workspaceId: 400,
          role: 'ADMIN',
          scopes: ALL_SCOPES,
          createdBy: 40,
        },
        {
          id: 4001,
          secret: Q.ws2,
          name: 'quota ws two',
          workspaceId: 400,
          role: 'ADMIN',
          scopes: ALL_SCOPES,
          createdBy: 40,
        },
        { id: 4002, secret: Q.noScope, name: 'quota none', workspaceId: 400, role: 'ADMIN', scopes: [], createdBy: 40 },
        { id: 4020, secret: Q.partner, name: 'quota partner', organizationId: 4 },
      ],
    },
  });
  b = await startStack({ clock, db: a.db, stores: stores.b, mode: 'gateway', upstreamUrl: a.backendUrl });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
  for (const st of extraStores) await st.close();
});

const tags = (inst: Stack, key = Q.ws, ip = '10.40.0.1') => inst.request('GET', '/v2/workspaces/400/tags', { key, ip });
const report = (inst: Stack, key = Q.ws) =>
  inst.request('GET', '/v2/workspaces/400/rate-limit', { key, ip: '10.40.9.9' });
const nextMinute = () => clock.advance(60_000 - (clock.t % 60_000));
const secondsToDecember = () => Math.ceil((DECEMBER - clock.now()) / 1000);

describe('per-customer budgets', () => {
  it("an organization's override set through a's backend applies to b's very next request: headers, report and refusal", async () => {
    nextMinute();
    // Cached on b at the plan's budget (Growth: 20 reads), with the usual two policies.
    const before = await tags(b);
    expect(before.status).toBe(200);
    expect(before.headers.get('x-ratelimit-limit')).toBe('20');
    expect(before.headers.get('ratelimit-policy')).toBe('"read";q=20;w=60, "ip";q=100;w=60');

    const patch = await a.internal('PATCH', '/internal/organizations/4', { limits: { read: 7 } });
    expect(patch.status).toBe(200);
    expect(patch.body.data.limits).toEqual({
      overrides: { read: 7, write: null, bulk: null, monthlyQuota: null },
      effective: { read: 7, write: 10, bulk: 4, monthlyQuota: null },
    });

    // Audited in the change's transaction, as the internal caller.
    const audit = await a.db.query(
      `SELECT actor_kind, target_ids, before, after FROM audit_events WHERE action = 'organization.limits' ORDER BY id`,
    );
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actor_kind: 'internal',
      target_ids: ['4'],
      before: { read: null },
      after: { read: 7 },
    });

    const after = await tags(b);
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-limit')).toBe('7');
    expect(after.headers.get('x-ratelimit-remaining')).toBe('5'); // two spent this minute
    expect(after.headers.get('ratelimit-policy')).toBe('"read";q=7;w=60, "ip";q=100;w=60');
    const r = await report(b);
    expect(r.body.data.buckets.read).toMatchObject({ limit: 7, used: 2, remaining: 5, source: 'organization' });
    expect(r.body.data.buckets.write).toEqual({
      limit: 10,
      used: 0,
      remaining: 10,
      reset: r.body.data.buckets.read.reset,
    });
    for (let i = 0; i < 5; i++) expect((await tags(i % 2 ? a : b)).status).toBe(200);
    const refused = await tags(a);
    expect(refused.status).toBe(429);
    expect(refused.body.errorCode).toBe('150005');
    expect(refused.body.errorMessage).toBe('Rate limit exceeded for the Read bucket.');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('7');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it("a key's override beats its organization's; clearing both gives the plan's budget back, headers as before", async () => {
    nextMinute();
    await setKeyLimits(limitsCtx(), 4000, { read: 3 });
    const r = await tags(b);
    expect(r.headers.get('x-ratelimit-limit')).toBe('3');
    expect((await report(b)).body.data.buckets.read).toMatchObject({ limit: 3, source: 'key' });
    // The other key of the organization keeps the organization's override.
    expect((await tags(b, Q.ws2)).headers.get('x-ratelimit-limit')).toBe('7');
    for (let i = 0; i < 2; i++) expect((await tags(a)).status).toBe(200);
    expect((await tags(b)).status).toBe(429);

    await setKeyLimits(limitsCtx(), 4000, { read: null });
    expect((await tags(b)).headers.get('x-ratelimit-limit')).toBe('7');
    await setOrganizationLimits(limitsCtx(), 4, { read: null, write: null, bulk: null });
    const back = await tags(b);
    expect(back.headers.get('x-ratelimit-limit')).toBe('20');
    expect(back.headers.get('ratelimit-policy')).toBe('"read";q=20;w=60, "ip";q=100;w=60');
    const rep = await report(a);
    expect(rep.body.data.buckets.read.source).toBeUndefined();
    expect(rep.body.data.month).toBeUndefined();
  });

  it('refuses a bad override in its envelope and changes nothing', async () => {
    for (const limits of [
      { read: 0 },
      { read: 1.5 },
      { monthlyQuota: -1 },
      { monthlyQuota: 'lots' },
      {},
      { burst: 3 },
    ]) {
      const r = await a.internal('PATCH', '/internal/organizations/4', { limits });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
    }
    const unknownPlan = await a.internal('PATCH', '/internal/organizations/4', { plan: 'platinum' });
    expect(unknownPlan.status).toBe(400);
    expect(unknownPlan.text).toContain('platinum');
    expect((await tags(b)).headers.get('x-ratelimit-limit')).toBe('20');
  });
});

describe('monthly quota', () => {
  const QUOTA = 25;
  const BURST = 60;

  it('admits exactly the quota under a concurrent burst spread over both instances, then 429 150005 until the month turns', async () => {
    nextMinute();
    // Per-minute budgets high enough that only the quota can refuse.
    await setKeyLimits(limitsCtx(), 4000, { read: 1000 });
    await setKeyLimits(limitsCtx(), 4001, { read: 1000 });
    const set = await a.internal('PATCH', '/internal/organizations/4', { limits: { monthlyQuota: QUOTA } });
    expect(set.status).toBe(200);
    expect(set.body.data.limits.effective.monthlyQuota).toBe(QUOTA);

    const answers: Res[] = await Promise.all(
      Array.from({ length: BURST }, (_, i) => tags(i % 2 ? a : b, i % 3 ? Q.ws : Q.ws2, `10.41.${i % 4}.${i}`)),
    );
    const ok = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    expect(ok).toHaveLength(QUOTA);
    expect(refused).toHaveLength(BURST - QUOTA);
    for (const r of refused) {
      expect(r.body.errorCode).toBe('150005');
      expect(r.body.errorMessage).toBe(`Monthly request quota of ${QUOTA} exhausted; it renews on 2026-12-01 (UTC).`);
      expect(r.headers.get('retry-after')).toBe(String(secondsToDecember()));
      expect(r.headers.get('ratelimit')).toMatch(new RegExp(`, "month";r=0;t=${secondsToDecember()}$`));
    }
    // Every answer names the three policies.
    for (const r of answers)
      expect(r.headers.get('ratelimit-policy')).toBe(
        `"read";q=1000;w=60, "ip";q=100;w=60, "month";q=${QUOTA};w=${NOVEMBER_SECONDS}`,
      );

    // The counter holds exactly the admitted requests, on either instance's report.
    for (const inst of [a, b]) {
      const rep = await report(inst);
      expect(rep.status).toBe(200);
      expect(rep.body.data.month).toEqual({ limit: QUOTA, used: QUOTA, remaining: 0, reset: DECEMBER / 1000 });
    }

    // /v1 spends the same quota: refused too, in its own shape, and its report shows the month.
    const v1 = await b.request('GET', '/v1/email-accounts', { apiKey: Q.partner, ip: '10.41.9.1' });
    expect(v1.status).toBe(429);
    expect(v1.body.error ?? v1.body.code ?? v1.text).toBeTruthy();
    expect(v1.text).toContain('Monthly request quota');
    expect(v1.headers.get('ratelimit-policy')).toBe(`"partner";q=20;w=60, "month";q=${QUOTA};w=${NOVEMBER_SECONDS}`);
    const v1Report = await a.request('GET', '/v1/rate-limit', { apiKey: Q.partner, ip: '10.41.9.1' });
    expect(v1Report.body.month).toEqual({ limit: QUOTA, used: QUOTA, remaining: 0, reset: DECEMBER / 1000 });

    // Raising the quota applies on the next request at every instance.
    await a.internal('PATCH', '/internal/organizations/4', { limits: { monthlyQuota: QUOTA + 1 } });
    expect((await tags(b)).status).toBe(200);
    expect((await tags(a)).status).toBe(429);
  });

  it('a refusal before the rate-limit step, and the reports, show the month without spending it', async () => {
    const scope = await b.request('GET', '/v2/workspaces/400/tags', { key: Q.noScope, ip: '10.42.0.1' });
    expect(scope.status).toBe(403);
    expect(scope.headers.get('ratelimit-policy')).toContain(`"month";q=${QUOTA + 1};w=${NOVEMBER_SECONDS}`);
    const missing = await a.request('GET', '/v2/workspaces/400/nothing-here', { key: Q.ws, ip: '10.42.0.1' });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('ratelimit-policy')).toContain('"month"');
    expect((await report(b)).body.data.month.used).toBe(QUOTA + 1);
  });

  it('renews when the calendar month turns (UTC)', async () => {
    clock.t = DECEMBER + 5_000;
    const r = await tags(a);
    expect(r.status).toBe(200);
    // December has 31 days.
    expect(r.headers.get('ratelimit-policy')).toBe(
      `"read";q=1000;w=60, "ip";q=100;w=60, "month";q=${QUOTA + 1};w=${31 * 86_400}`,
    );
    expect(r.headers.get('ratelimit')).toMatch(
      new RegExp(`"month";r=${QUOTA};t=${Math.ceil((Date.UTC(2027, 0, 1) - clock.now()) / 1000)}$`),
    );
    expect((await report(b)).body.data.month).toMatchObject({ used: 1, remaining: QUOTA });
  });

  it("'none' removes a plan's quota for the organization; clearing it gives the plan's back", async () => {
    await a.internal('PATCH', '/internal/organizations/4', { limits: { monthlyQuota: 'none' } });
    const r = await tags(b);
    expect(r.headers.get('ratelimit-policy')).not.toContain('month');
    expect((await report(a)).body.data.month).toBeUndefined();
  });
});

// Counting commands needs a real standalone Redis; a Cluster's keys span slots (two round trips
// already, test/gateway/round-trips.test.ts).
describe.runIf(Boolean(process.env.REDIS_URL) && !clusterNodes())('redis round trips with a quota', () => {
  it('a cached request of an organization with a quota and overrides costs one round trip, accepted or refused', async () => {
    nextMinute();
    await a.internal('PATCH', '/internal/organizations/4', { limits: { monthlyQuota: 1_000_000, read: 5 } });
    await setKeyLimits(limitsCtx(), 4000, { read: null });
    expect((await tags(a)).status).toBe(200); // resolves and caches the principal on a
    const trips = async () => {
      const before = sent;
      const r = await tags(a, Q.ws, '10.43.0.1');
      return { status: r.status, trips: sent - before };
    };
    for (let i = 0; i < 4; i++) expect(await trips()).toEqual({ status: 200, trips: 1 });
    expect(await trips()).toEqual({ status: 429, trips: 1 });
  });
});

// Analytics through the gateway: the rolling 30-day window ending at the (fake) clock, the rates'
// definitions, workspace scoping, zeros for no sends, and the per-account row being exactly the
// workspace row.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 0));
let s: Stack;
const W = '/v2/workspaces/100';
const DAY = 86_400_000;

async function msg(
  accountId: number,
  at: number,
  outcome: 'inbox' | 'spam' | 'bounced',
  replied = false,
  esp = 'google',
) {
  await s.db.query(
    `INSERT INTO warmup_messages (account_id, sent_at, recipient_esp, outcome, replied) VALUES ($1, $2::timestamptz, $3, $4, $5)`,
    [accountId, new Date(at).toISOString(), esp, outcome, replied],
  );
}

const get = (path: string, key = K.wsAdmin) => s.request('GET', path, { key, ip: '10.0.20.1' });

beforeAll(async () => {
  s = await startStack({ clock });
  const now = clock.now();
  // The seed's history is relative to the database's today; replace it with one relative to the clock.
  await s.db.query(`DELETE FROM warmup_messages`);
  // 5000: 10 in the window (7 inbox, 2 spam, 1 bounced; 3 replied), spread over days 0..9 ago.
  const outcomes: ('inbox' | 'spam' | 'bounced')[] = [
    'inbox',
    'inbox',
    'inbox',
    'inbox',
    'inbox',
    'inbox',
    'inbox',
    'spam',
    'spam',
    'bounced',
  ];
  for (const [i, o] of outcomes.entries())
    await msg(5000, now - i * DAY - 60_000, o, i < 3, i % 2 ? 'microsoft' : 'google');
  // 5001: 4 in the window, all inbox.
  for (let i = 0; i < 4; i++) await msg(5001, now - i * 3_600_000, 'inbox');
  // Outside the window: too old, and after now (the tests move the clock by minutes, not days).
  await msg(5000, now - 30 * DAY, 'spam');
  await msg(5000, now - 45 * DAY, 'bounced');
  await msg(5001, now + DAY, 'spam');
  // Another workspace (101) and another organization (6000): never counted in 100.
  await msg(5100, now - DAY, 'spam');
  await msg(6000, now - DAY, 'bounced');
  // 5002 sends nothing.
});
afterAll(async () => s?.close());
// A new rate-limit window per test.
beforeEach(() => clock.advance(60_000));

describe('analytics: deliverability', () => {
  it('gives one record per account of the workspace, with the defined rates', async () => {
    const r = await get(`${W}/analytics/deliverability`);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([
      { accountId: 5000, emailAddress: 'a@acme.test', deliverabilityRate: 70, bounceRate: 10, spamRate: 20, sent: 10 },
      { accountId: 5001, emailAddress: 'b@acme.test', deliverabilityRate: 100, bounceRate: 0, spamRate: 0, sent: 4 },
      { accountId: 5002, emailAddress: 'c@acme.test', deliverabilityRate: 0, bounceRate: 0, spamRate: 0, sent: 0 },
    ]);
    expect(r.body.meta.windowDays).toBe(30);
    expect(r.body.meta.windowEnd).toBe(new Date(clock.now()).toISOString());
  });

  it('answers exactly the workspace row for each account, zeros included', async () => {
    const all = (await get(`${W}/analytics/deliverability`)).body.data;
    for (const row of all) {
      const one = await get(`${W}/accounts/${row.accountId}/deliverability`, K.wsViewer);
      expect(one.status).toBe(200);
      expect(one.body.data).toEqual(row);
    }
  });

  it('is 404 for an account of another workspace or organization, or none', async () => {
    for (const id of [5100, 6000, 999999, 99999999999]) {
      const r = await get(`${W}/accounts/${id}/deliverability`);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('not_found');
      expect((await get(`${W}/accounts/${id}/stats`)).status).toBe(404);
    }
  });

  it('scopes by the path workspace', async () => {
    const r = await s.request('GET', '/v2/workspaces/101/analytics/deliverability', {
      key: K.wsOther,
      ip: '10.0.20.2',
    });
    expect(r.body.data).toEqual([
      { accountId: 5100, emailAddress: 'd@acme.test', deliverabilityRate: 0, bounceRate: 0, spamRate: 100, sent: 1 },
    ]);
  });

  it('refuses a caller-chosen window', async () => {
    const r = await get(`${W}/analytics/deliverability?days=7`);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
    expect(r.body.error.details.field).toBe('days');
  });

  it('moves with the clock: after 31 days nothing is left in the window', async () => {
    const saved = clock.t;
    clock.t = saved + 31 * DAY;
    try {
      const r = await get(`${W}/accounts/5000/deliverability`);
      expect(r.body.data).toEqual({
        accountId: 5000,
        emailAddress: 'a@acme.test',
        deliverabilityRate: 0,
        bounceRate: 0,
        spamRate: 0,
        sent: 0,
      });
    } finally {
      clock.t = saved;
    }
  });
});

describe('analytics: overview, trends, leaderboard, stats', () => {
  it('overview totals the workspace', async () => {
    const r = await get(`${W}/analytics/overview`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      windowDays: 30,
      totalAccounts: 3,
      warmingAccounts: 1,
      pausedAccounts: 1,
      accountsWithSends: 2,
      sent: 14,
      inbox: 11,
      spam: 2,
      bounced: 1,
      replied: 3,
      deliverabilityRate: 78.57,
      spamRate: 14.29,
      bounceRate: 7.14,
      replyRate: 21.43,
    });
  });

  it('trends give one bucket per UTC day of the window, adding up to the overview', async () => {
    const r = await get(`${W}/analytics/trends`);
    expect(r.status).toBe(200);
    const days = r.body.data.days as { date: string; sent: number; inbox: number; spam: number; bounced: number }[];
    expect(days).toHaveLength(31);
    const now = new Date(clock.now());
    expect(days[30].date).toBe(now.toISOString().slice(0, 10));
    expect(days[0].date).toBe(new Date(clock.now() - 30 * DAY).toISOString().slice(0, 10));
    expect(days.reduce((a, d) => a + d.sent, 0)).toBe(14);
    expect(days.reduce((a, d) => a + d.spam, 0)).toBe(2);
    // Today: 5000's message of 1 minute ago, 5001's four.
    expect(days[30]).toMatchObject({ sent: 5, inbox: 5, deliverabilityRate: 100 });
    expect(days[0]).toMatchObject({ sent: 0, deliverabilityRate: 0 });
  });

  it('leaderboard ranks accounts that sent, best deliverability first', async () => {
    const r = await get(`${W}/analytics/leaderboard`);
    expect(r.status).toBe(200);
    expect(r.body.data.map((x: any) => [x.rank, x.accountId, x.deliverabilityRate])).toEqual([
      [1, 5001, 100],
      [2, 5000, 70],
    ]);
    const one = await get(`${W}/analytics/leaderboard?limit=1`);
    expect(one.body.data).toHaveLength(1);
    for (const bad of ['0', '101', '1.5', 'x']) {
      const b = await get(`${W}/analytics/leaderboard?limit=${bad}`);
      expect(b.status).toBe(400);
      expect(b.body.error.details.field).toBe('limit');
    }
  });

  it('stats of an account, and zeros for one with no sends', async () => {
    const r = await get(`${W}/accounts/5000/stats`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      accountId: 5000,
      sent: 10,
      inbox: 7,
      spam: 2,
      bounced: 1,
      replied: 3,
      replyRate: 30,
      deliverabilityRate: 70,
    });
    const esp = r.body.data.byRecipientEsp;
    expect(esp.map((e: any) => [e.esp, e.sent])).toEqual([
      ['google', 5],
      ['microsoft', 5],
    ]);
    const z = await get(`${W}/accounts/5002/stats`);
    expect(z.status).toBe(200);
    expect(z.body.data).toMatchObject({
      accountId: 5002,
      sent: 0,
      inbox: 0,
      spam: 0,
      bounced: 0,
      replied: 0,
      deliverabilityRate: 0,
      spamRate: 0,
      bounceRate: 0,
      replyRate: 0,
      byRecipientEsp: [],
    });
  });

  it('window is (now - 30 days, now]', async () => {
    const t = clock.now();
    for (const at of [t, t - 30 * DAY + 1, t - 30 * DAY, t + 1]) await msg(5002, at, 'inbox');
    try {
      const r = await get(`${W}/accounts/5002/deliverability`);
      expect(r.body.data.sent).toBe(2);
    } finally {
      await s.db.query(`DELETE FROM warmup_messages WHERE account_id = 5002`);
    }
  });

  it('needs analytics:read', async () => {
    const r = await s.request('GET', `${W}/analytics/overview`, { key: K.wsNoScope, ip: '10.0.20.3' });
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150003');
  });
});

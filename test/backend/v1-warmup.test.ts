// /v1 warmup through the gateway: every rule of the spec's PATCH table (accepted and refused case),
// entitlements, the plan cap, time-zone rescheduling of pending sends, per-day windows, today's
// activity, start, stop and bulk actions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Res, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { zonedToUtc } from '../../src/backend/time.js';
import { jobsOf } from '../../src/backend/jobs.js';

// Monday 2027-01-04 12:00 UTC: today's default window (09:00-17:00) is half over.
const clock = new FakeClock(Date.UTC(2027, 0, 4, 12, 0, 0));
const K4 = 'svc_v1_' + 'Org4Partner00000000000000000000000001';
let s: Stack;
let spent = 0;

async function v1(method: string, path: string, body?: unknown, apiKey = K4): Promise<Res> {
  if (++spent > 20) {
    clock.advance(60_000);
    spent = 1;
  }
  return s.request(method, path, { apiKey, body, ip: '10.42.0.1' });
}

const acct = (id: number, workspaceId: number, email: string, extra: Record<string, unknown> = {}) => ({
  id,
  workspaceId,
  emailAddress: email,
  fromName: 'T',
  provider: 'google',
  status: 'active',
  verification: 'passed',
  warmupMaxLimit: 40,
  ...extra,
});

beforeAll(async () => {
  s = await startStack({
    clock,
    extra: {
      organizations: [{ id: 4, name: 'Delta', plan: 'scale_5k', apiAccess: true, paused: false, warmupCap: null }],
      workspaces: [{ id: 400, organizationId: 4, name: 'Delta main' }],
      apiKeys: [{ id: 4000, secret: K4, name: 'delta partner', organizationId: 4 }],
      accounts: [
        acct(8000, 400, 'rules@delta.test'),
        acct(8001, 400, 'today@delta.test'),
        acct(8002, 400, 'kiri@delta.test', { timeZone: 'Pacific/Kiritimati' }),
        acct(5005, 100, 'tz@acme.test'),
        acct(5006, 100, 'startstop@acme.test'),
        acct(5007, 100, 'cap@acme.test'),
        acct(6001, 200, 'f@beta.test'),
        acct(6002, 200, 'g@beta.test'),
      ],
    },
  });
});
afterAll(async () => s?.close());

const settings = async (id: number, key = K4) => (await v1('GET', `/v1/warmup-settings/${id}`, undefined, key)).body;

describe('GET /v1/warmup-settings', () => {
  it('returns the defaults and the shared columns', async () => {
    const r = await v1('GET', '/v1/warmup-settings/8000');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      emailAccountId: 8000,
      strategy: 'progressive',
      timeZone: 'UTC',
      warmupStatus: 'inactive',
      warmupLanguage: 'English',
      upcomingContentConfig: { industry: 'general', topics: [] },
      googleVolumePercentage: 40,
      microsoftVolumePercentage: 40,
      othersVolumePercentage: 20,
      maxSendingLimit: 40,
      warmUpInitialSendingLimit: 5,
      increaseEmailsByNumber: 2,
      // automatic mode: the top of the band for a daily limit of 20 (config/warmup-bands.json)
      replyRate: 40,
      dailySendingLimit: 20,
      dailyReceivingLimit: 20,
    });
    expect(r.body.timeSlots).toHaveLength(7);
    expect(r.body.timeSlots[0]).toEqual({ day: 'monday', fromHour: 9, fromMinute: 0, toHour: 17, toMinute: 0 });
    expect((await v1('GET', '/v1/warmup-settings/5000')).status).toBe(404);
  });
});

interface Refused {
  body: Record<string, unknown>;
  status?: number;
  code?: string;
  field?: string;
}
interface Rule {
  rule: string;
  accepted: Record<string, unknown>[];
  refused: Refused[];
  /** Checks the GET after the last accepted body. */
  check?: (g: any) => void;
  account?: number;
  key?: string;
}

const slot = (day: string, fromHour: number, fromMinute: number, toHour: number, toMinute: number) => ({
  day,
  fromHour,
  fromMinute,
  toHour,
  toMinute,
});

const RULES: Rule[] = [
  {
    rule: 'strategy is progressive, flat, randomize or smart',
    accepted: [{ strategy: 'smart' }, { strategy: 'flat' }, { strategy: 'randomize' }, { strategy: 'progressive' }],
    refused: [
      { body: { strategy: 'aggressive' }, field: 'strategy' },
      { body: { strategy: 'FLAT' }, field: 'strategy' },
    ],
    check: (g) => expect(g.strategy).toBe('progressive'),
  },
  {
    rule: 'maxSendingLimit is 0 to 100',
    accepted: [{ maxSendingLimit: 100 }, { maxSendingLimit: 0 }],
    refused: [
      { body: { maxSendingLimit: 101 }, field: 'maxSendingLimit' },
      { body: { maxSendingLimit: -1 }, field: 'maxSendingLimit' },
      { body: { maxSendingLimit: 2.5 }, field: 'maxSendingLimit' },
    ],
    // 0 is below v2's floor of 5: reported as 0 and nothing is sent, the shared column stays at 5.
    check: (g) => expect([g.maxSendingLimit, g.dailySendingLimit]).toEqual([0, 0]),
  },
  {
    rule: 'warmUpInitialSendingLimit is 0 to 100',
    accepted: [{ warmUpInitialSendingLimit: 0 }, { warmUpInitialSendingLimit: 100 }],
    refused: [
      { body: { warmUpInitialSendingLimit: 101 }, field: 'warmUpInitialSendingLimit' },
      { body: { warmUpInitialSendingLimit: -1 }, field: 'warmUpInitialSendingLimit' },
    ],
    check: (g) => expect(g.warmUpInitialSendingLimit).toBe(100),
  },
  {
    rule: 'increaseEmailsByNumber is 0 to 30',
    accepted: [{ increaseEmailsByNumber: 0 }, { increaseEmailsByNumber: 30 }],
    refused: [
      { body: { increaseEmailsByNumber: 31 }, field: 'increaseEmailsByNumber' },
      { body: { increaseEmailsByNumber: -1 }, field: 'increaseEmailsByNumber' },
    ],
    check: (g) => expect(g.increaseEmailsByNumber).toBe(30),
  },
  {
    rule: 'increaseEmailsByNumber must be 0 with flat or randomize, enforced only when strategy is sent too',
    accepted: [
      { strategy: 'flat', increaseEmailsByNumber: 0 },
      { increaseEmailsByNumber: 3 }, // stored strategy is flat, but strategy is not in this request
      { strategy: 'randomize' }, // increaseEmailsByNumber not in this request
      { strategy: 'progressive', increaseEmailsByNumber: 7 },
      { strategy: 'smart', increaseEmailsByNumber: 7 },
    ],
    refused: [
      { body: { strategy: 'flat', increaseEmailsByNumber: 3 }, field: 'increaseEmailsByNumber' },
      { body: { strategy: 'randomize', increaseEmailsByNumber: 1 }, field: 'increaseEmailsByNumber' },
    ],
    check: (g) => expect([g.strategy, g.increaseEmailsByNumber]).toEqual(['smart', 7]),
  },
  {
    rule: 'replyRate is 0 to 65',
    accepted: [{ replyRate: 0 }, { replyRate: 65 }],
    refused: [
      { body: { replyRate: 65.5 }, field: 'replyRate' },
      { body: { replyRate: -1 }, field: 'replyRate' },
      { body: { replyRate: '40' }, field: 'replyRate' },
    ],
    check: (g) => expect(g.replyRate).toBe(65),
  },
  {
    rule: 'timeZone is an IANA zone name',
    accepted: [
      { timeZone: 'UTC' },
      { timeZone: 'Asia/Kolkata' },
      { timeZone: 'Asia/Calcutta' },
      { timeZone: 'Europe/Kyiv' },
      { timeZone: 'America/Argentina/Buenos_Aires' },
    ],
    refused: [
      { body: { timeZone: 'Mars/Olympus' }, field: 'timeZone' },
      { body: { timeZone: 'asia/kolkata' }, field: 'timeZone' },
      { body: { timeZone: 'utc' }, field: 'timeZone' },
      { body: { timeZone: '+05:30' }, field: 'timeZone' },
      { body: { timeZone: 5 }, field: 'timeZone' },
    ],
    check: (g) => expect(g.timeZone).toBe('America/Argentina/Buenos_Aires'),
  },
  {
    rule: 'timeSlots: per-day windows, from earlier than to, omitted days keep theirs',
    accepted: [
      { timeSlots: [slot('monday', 8, 0, 12, 30)] },
      { timeSlots: [slot('friday', 0, 0, 23, 59), slot('sunday', 10, 15, 10, 16)] },
    ],
    refused: [
      { body: { timeSlots: [slot('tuesday', 10, 0, 10, 0)] }, field: 'timeSlots.0' },
      { body: { timeSlots: [slot('tuesday', 11, 0, 10, 59)] }, field: 'timeSlots.0' },
      { body: { timeSlots: [slot('funday', 8, 0, 9, 0)] }, field: 'timeSlots.0.day' },
      { body: { timeSlots: [slot('monday', 24, 0, 9, 0)] }, field: 'timeSlots.0.fromHour' },
      { body: { timeSlots: [slot('monday', 8, 60, 9, 0)] }, field: 'timeSlots.0.fromMinute' },
      { body: { timeSlots: [slot('monday', 8, 0, 9, 0), slot('monday', 10, 0, 11, 0)] }, field: 'timeSlots' },
      { body: { timeSlots: [] }, field: 'timeSlots' },
      { body: { timeSlots: [{ ...slot('monday', 8, 0, 9, 0), tz: 'UTC' }] }, field: 'timeSlots.0.tz' },
    ],
    check: (g) => {
      expect(g.timeSlots[0]).toEqual(slot('monday', 8, 0, 12, 30));
      expect(g.timeSlots[1]).toEqual(slot('tuesday', 9, 0, 17, 0));
      expect(g.timeSlots[4]).toEqual(slot('friday', 0, 0, 23, 59));
      expect(g.timeSlots[6]).toEqual(slot('sunday', 10, 15, 10, 16));
    },
  },
  {
    rule: 'warmupLanguage is one of the 12 names',
    accepted: [{ warmupLanguage: 'Spanish' }, { warmupLanguage: 'Dutch' }],
    refused: [
      { body: { warmupLanguage: 'Klingon' }, field: 'warmupLanguage' },
      { body: { warmupLanguage: 'spanish' }, field: 'warmupLanguage' },
    ],
    check: (g) => expect(g.warmupLanguage).toBe('Dutch'),
  },
  {
    rule: 'warmupLanguage needs the warmup-language entitlement (growth has it)',
    account: 5005,
    key: K.partner,
    accepted: [{ warmupLanguage: 'French' }],
    refused: [{ body: { warmupLanguage: 'Klingon' }, field: 'warmupLanguage' }],
    check: (g) => expect(g.warmupLanguage).toBe('French'),
  },
  {
    rule: 'warmupLanguage is refused without the entitlement (free)',
    account: 6001,
    key: K.org2Partner,
    accepted: [{ warmupLanguage: undefined, strategy: 'smart' }],
    refused: [
      { body: { warmupLanguage: 'French' }, status: 403, code: 'entitlement_required', field: 'warmupLanguage' },
    ],
    check: (g) => expect(g.warmupLanguage).toBe('English'),
  },
  {
    rule: 'upcomingContentConfig: industry and topics, with the content-setting entitlement',
    accepted: [
      { upcomingContentConfig: { industry: 'SaaS', topics: ['onboarding', 'pricing'] } },
      { upcomingContentConfig: { industry: 'Retail', topics: [] } },
    ],
    refused: [
      { body: { upcomingContentConfig: { industry: '', topics: [] } }, field: 'upcomingContentConfig.industry' },
      { body: { upcomingContentConfig: { industry: 'x' } }, field: 'upcomingContentConfig.topics' },
      {
        body: { upcomingContentConfig: { industry: 'x', topics: [], tone: 'warm' } },
        field: 'upcomingContentConfig.tone',
      },
    ],
    check: (g) => expect(g.upcomingContentConfig).toEqual({ industry: 'Retail', topics: [] }),
  },
  {
    rule: 'upcomingContentConfig is refused without the entitlement (growth lacks content_settings)',
    account: 5005,
    key: K.partner,
    accepted: [{ replyRate: 20 }],
    refused: [
      {
        body: { upcomingContentConfig: { industry: 'SaaS', topics: [] } },
        status: 403,
        code: 'entitlement_required',
        field: 'upcomingContentConfig',
      },
    ],
    check: (g) => expect(g.upcomingContentConfig).toEqual({ industry: 'general', topics: [] }),
  },
  {
    rule: 'the three volumes are 1 to 98, sent together, summing to exactly 100',
    accepted: [
      { googleVolume: 98, microsoftVolume: 1, othersVolume: 1 },
      { googleVolume: 50, microsoftVolume: 30, othersVolume: 20 },
    ],
    refused: [
      { body: { googleVolume: 50, microsoftVolume: 50 }, field: 'othersVolume' },
      { body: { othersVolume: 100 }, field: 'othersVolume' },
      { body: { othersVolume: 20 }, field: 'googleVolume' },
      { body: { googleVolume: 50, microsoftVolume: 30, othersVolume: 19 }, field: 'googleVolume' },
      { body: { googleVolume: 50, microsoftVolume: 30, othersVolume: 21 }, field: 'googleVolume' },
      { body: { googleVolume: 99, microsoftVolume: 1, othersVolume: 0 }, field: 'googleVolume' },
      { body: { googleVolume: 0, microsoftVolume: 50, othersVolume: 50 }, field: 'googleVolume' },
      { body: { googleVolume: 1, microsoftVolume: 1, othersVolume: 98.5 }, field: 'othersVolume' },
    ],
    check: (g) =>
      expect([g.googleVolumePercentage, g.microsoftVolumePercentage, g.othersVolumePercentage]).toEqual([50, 30, 20]),
  },
  {
    rule: "maxSendingLimit is capped by the plan's per-mailbox cap, as on /v2 (growth: 50)",
    account: 5005,
    key: K.partner,
    accepted: [{ maxSendingLimit: 50 }],
    refused: [{ body: { maxSendingLimit: 51 }, field: 'maxSendingLimit' }],
    check: (g) => expect(g.maxSendingLimit).toBe(50),
  },
  {
    rule: 'the body is strict and not empty',
    accepted: [{ strategy: 'smart' }],
    refused: [
      { body: {}, field: '(body)' },
      { body: { warmupLevel: 3 }, field: 'warmupLevel' },
      { body: { googleVolumePercentage: 40 }, field: 'googleVolumePercentage' },
    ],
  },
];

describe('PATCH /v1/warmup-settings: every rule of the table', () => {
  it.each(RULES)('$rule', async (r) => {
    const id = r.account ?? 8000;
    const key = r.key ?? K4;
    for (const body of r.accepted) {
      const res = await v1('PATCH', `/v1/warmup-settings/${id}`, body, key);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(res.body.emailAccountId).toBe(id);
    }
    const before = await settings(id, key);
    r.check?.(before);
    for (const c of r.refused) {
      const res = await v1('PATCH', `/v1/warmup-settings/${id}`, c.body, key);
      expect(res.status, JSON.stringify(c.body)).toBe(c.status ?? 400);
      expect(res.body.error_code).toBe(c.code ?? 'invalid_request');
      if (c.field) expect(res.body.details.field, JSON.stringify(c.body)).toBe(c.field);
    }
    // A refused request changes nothing.
    expect(await settings(id, key)).toEqual(before);
  });

  it("keeps accounts.warmup_max_limit at v2's floor of 5 for a v1 max below it", async () => {
    await v1('PATCH', '/v1/warmup-settings/8001', { maxSendingLimit: 3 });
    const [row] = await s.db.query(`SELECT warmup_max_limit, warmup_current_limit FROM accounts WHERE id = 8001`);
    expect(row).toEqual({ warmup_max_limit: 5, warmup_current_limit: 5 });
    expect((await settings(8001)).maxSendingLimit).toBe(3);
    await v1('PATCH', '/v1/warmup-settings/8001', { maxSendingLimit: 60 });
    const [after] = await s.db.query(`SELECT warmup_max_limit, warmup_current_limit FROM accounts WHERE id = 8001`);
    expect(after).toEqual({ warmup_max_limit: 60, warmup_current_limit: 5 });
    expect(await settings(8001)).toMatchObject({ maxSendingLimit: 60, dailySendingLimit: 5 });
    // Another writer of the shared column (a /v2 PATCH, a plan cap) makes it the max again.
    await v1('PATCH', '/v1/warmup-settings/8001', { maxSendingLimit: 2 });
    expect((await settings(8001)).maxSendingLimit).toBe(2);
    await s.db.query(`UPDATE accounts SET warmup_max_limit = 5 WHERE id = 8001`);
    expect(await settings(8001)).toMatchObject({ maxSendingLimit: 5, dailySendingLimit: 5 });
  });

  it('shares the mailbox settings with /v2: a v1 change is what v2 reads, and back', async () => {
    const r = await v1('PATCH', '/v1/warmup-settings/5007', { maxSendingLimit: 30, replyRate: 25 }, K.partner);
    expect(r.status).toBe(200);
    const v2 = await s.request('GET', '/v2/workspaces/100/accounts/5007/warmup/settings', {
      key: K.wsAdmin,
      ip: '10.42.9.1',
    });
    expect(v2.status).toBe(200);
    expect(v2.body.data).toMatchObject({ warmupMaxLimit: 30, replyRate: 25, replyRateCustom: true });
    await s.db.query(`UPDATE accounts SET reply_rate_custom = NULL, time_zone = 'Europe/Paris' WHERE id = 5007`);
    expect(await settings(5007, K.partner)).toMatchObject({
      maxSendingLimit: 30,
      timeZone: 'Europe/Paris',
      replyRate: 40,
    });
  });

  it('404 for an account of another organization', async () => {
    const r = await v1('PATCH', '/v1/warmup-settings/8000', { strategy: 'flat' }, K.partner);
    expect(r.status).toBe(404);
    expect(r.body.error_code).toBe('not_found');
  });
});

describe('pending sends follow the time zone and the windows', () => {
  const pending = (id: number) =>
    s.db.query(
      `SELECT id, to_char(local_date, 'YYYY-MM-DD') AS d, local_minute, scheduled_at FROM v1_scheduled_sends
        WHERE account_id = $1 AND status = 'pending' ORDER BY id`,
      [id],
    );

  it('start plans the rest of today and tomorrow in the local windows', async () => {
    await v1('PATCH', '/v1/warmup-settings/5005', { timeZone: 'UTC' }, K.partner);
    const r = await v1('POST', '/v1/warmup/5005/start', undefined, K.partner);
    expect(r.status).toBe(200);
    const rows = await pending(5005);
    const limit = (await settings(5005, K.partner)).dailySendingLimit;
    const today = rows.filter((x) => x.d === '2027-01-04');
    const tomorrow = rows.filter((x) => x.d === '2027-01-05');
    expect(tomorrow).toHaveLength(limit);
    expect(today.length).toBeGreaterThan(0);
    expect(today.length).toBeLessThan(limit);
    for (const x of rows) {
      expect(x.local_minute).toBeGreaterThanOrEqual(9 * 60);
      expect(x.local_minute).toBeLessThan(17 * 60);
      expect(new Date(x.scheduled_at).getTime()).toBe(zonedToUtc(x.d, x.local_minute, 'UTC'));
      expect(new Date(x.scheduled_at).getTime()).toBeGreaterThan(clock.now());
    }
  });

  it('a timeZone change moves every pending send to the same wall-clock time in the new zone', async () => {
    const before = await pending(5005);
    const r = await v1('PATCH', '/v1/warmup-settings/5005', { timeZone: 'America/New_York' }, K.partner);
    expect(r.status).toBe(200);
    const after = await pending(5005);
    expect(after.map((x) => [x.id, x.d, x.local_minute])).toEqual(before.map((x) => [x.id, x.d, x.local_minute]));
    // New York is UTC-5 in January: each send moves 5 hours later.
    after.forEach((x, i) =>
      expect(new Date(x.scheduled_at).getTime() - new Date(before[i].scheduled_at).getTime()).toBe(5 * 3600_000),
    );
    // Back east past "now": sends whose new instant has passed are cancelled, the rest move.
    const r2 = await v1('PATCH', '/v1/warmup-settings/5005', { timeZone: 'Asia/Tokyo' }, K.partner);
    expect(r2.status).toBe(200);
    const tokyo = await pending(5005);
    for (const x of tokyo) {
      expect(new Date(x.scheduled_at).getTime()).toBe(zonedToUtc(x.d, x.local_minute, 'Asia/Tokyo'));
      expect(new Date(x.scheduled_at).getTime()).toBeGreaterThan(clock.now());
    }
    const [{ n }] = await s.db.query(
      `SELECT count(*)::int AS n FROM v1_scheduled_sends WHERE account_id = 5005 AND status = 'cancelled'`,
    );
    expect(n).toBe(before.length - tokyo.length);
    expect(n).toBeGreaterThan(0);
  });

  it("a window change replans that weekday's pending sends; other days keep theirs", async () => {
    const before = await pending(5005);
    const r = await v1('PATCH', '/v1/warmup-settings/5005', { timeSlots: [slot('tuesday', 13, 0, 14, 0)] }, K.partner);
    expect(r.status).toBe(200);
    const after = await pending(5005);
    const tue = after.filter((x) => x.d === '2027-01-05');
    expect(tue.length).toBe((await settings(5005, K.partner)).dailySendingLimit);
    for (const x of tue) {
      expect(x.local_minute).toBeGreaterThanOrEqual(13 * 60);
      expect(x.local_minute).toBeLessThan(14 * 60);
      expect(new Date(x.scheduled_at).getTime()).toBe(zonedToUtc(x.d, x.local_minute, 'Asia/Tokyo'));
    }
    expect(after.filter((x) => x.d !== '2027-01-05')).toEqual(before.filter((x) => x.d !== '2027-01-05'));
  });

  it('stop cancels every pending send', async () => {
    const r = await v1('POST', '/v1/warmup/5005/stop', undefined, K.partner);
    expect(r.body.current).toBe('paused');
    expect(await pending(5005)).toEqual([]);
  });
});

describe('warmup status and activity', () => {
  it("counts today's sends in the mailbox's local day; both routes answer the same", async () => {
    const at = (h: number) => new Date(clock.now() + h * 3600_000);
    const ins = (id: number, when: Date, esp: string, outcome: string, replied = false) =>
      s.db.query(
        `INSERT INTO warmup_messages (account_id, sent_at, recipient_esp, outcome, replied) VALUES ($1,$2,$3,$4,$5)`,
        [id, when, esp, outcome, replied],
      );
    for (const id of [8001, 8002]) {
      await ins(id, at(-1), 'google', 'inbox', true);
      await ins(id, at(-1), 'microsoft', 'inbox', true);
      await ins(id, at(-1), 'other', 'inbox');
      await ins(id, at(-1), 'yahoo', 'spam');
      await ins(id, at(-1), 'google', 'bounced');
      await ins(id, at(-2.5), 'google', 'inbox'); // 09:30Z: today in UTC, yesterday in Kiritimati (UTC+14)
      await ins(id, at(-13), 'google', 'inbox'); // yesterday everywhere
      await ins(id, at(+1), 'google', 'inbox'); // not yet
    }
    const utc = await v1('GET', '/v1/warmup-status/8001');
    expect(utc.status).toBe(200);
    expect(utc.body).toEqual({
      emailAccountId: 8001,
      date: '2027-01-04',
      current: 'inactive',
      strategy: 'progressive',
      dailySendingLimit: 5,
      sent: 6,
      received: 5,
      replied: 2,
      spam: 1,
      undelivered: 1,
      warmupScore: expect.any(Number),
      outreachReadinessStatus: 'notReady',
      workspaceId: null,
    });
    const kiri = await v1('GET', '/v1/warmup-status/8002');
    expect(kiri.body).toMatchObject({ date: '2027-01-05', sent: 5, received: 4, replied: 2, spam: 1, undelivered: 1 });
    const activity = await v1('GET', '/v1/warmup-activity/8002');
    expect(activity.body).toEqual(kiri.body);
    expect((await v1('GET', '/v1/warmup-activity/5000')).status).toBe(404);
  });
});

describe('start, stop, bulk', () => {
  it('start: pending check is 409 and starts later by itself; failed check and broken mailboxes are 422', async () => {
    const pend = await v1('POST', '/v1/warmup/5001/start', undefined, K.partner);
    expect(pend.status).toBe(409);
    expect(pend.body).toMatchObject({ error_code: 'conflict', details: { reason: 'mailbox_verification_pending' } });
    expect((await s.db.query(`SELECT warmup_requested FROM accounts WHERE id = 5001`))[0].warmup_requested).toBe(true);
    expect((await v1('GET', '/v1/email-accounts/5001/status', undefined, K.partner)).body.warmupStatus).toBe('pending');
    const failed = await v1('POST', '/v1/warmup/5002/start', undefined, K.partner);
    expect(failed.status).toBe(422);
    expect(failed.body.details.reason).toBe('mailbox_verification_failed');
    await s.db.query(`UPDATE accounts SET status = 'error' WHERE id = 5007`);
    const broken = await v1('POST', '/v1/warmup/5007/start', undefined, K.partner);
    expect(broken.status).toBe(422);
    expect(broken.body.details).toEqual({ reason: 'account_not_connected', status: 'error' });
    expect((await v1('POST', '/v1/warmup/6000/start', undefined, K.partner)).status).toBe(404);
    expect((await v1('POST', '/v1/warmup/5001/stop', undefined, K.partner)).body.current).toBe('inactive');
    expect((await s.db.query(`SELECT warmup_requested FROM accounts WHERE id = 5001`))[0].warmup_requested).toBe(false);
  });

  it('start and stop are idempotent and move the status', async () => {
    const a = await v1('POST', '/v1/warmup/5006/start', undefined, K.partner);
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ emailAccountId: 5006, current: 'active' });
    const [{ n }] = await s.db.query(`SELECT count(*)::int AS n FROM v1_scheduled_sends WHERE account_id = 5006`);
    expect((await v1('POST', '/v1/warmup/5006/start', undefined, K.partner)).status).toBe(200);
    const [{ n: n2 }] = await s.db.query(`SELECT count(*)::int AS n FROM v1_scheduled_sends WHERE account_id = 5006`);
    expect(n2).toBe(n);
    expect((await v1('GET', '/v1/email-accounts?search=startstop', undefined, K.partner)).body.items[0].status).toBe(
      'warming',
    );
    const stop = await v1('POST', '/v1/warmup/5006/stop', undefined, K.partner);
    expect(stop.body.current).toBe('paused');
    expect((await v1('POST', '/v1/warmup/5006/stop', undefined, K.partner)).body.current).toBe('paused');
    expect((await v1('POST', '/v1/warmup/5006/start', { force: true }, K.partner)).status).toBe(400);
  });

  it('bulk start/stop answers per account in input order and honours the warming-mailbox cap (free: 2)', async () => {
    const r = await v1(
      'POST',
      '/v1/warmup/bulk',
      { action: 'start', emailAccountIds: [6000, 6001, 6002, 5000] },
      K.org2Partner,
    );
    expect(r.status).toBe(200);
    expect(r.body.action).toBe('start');
    expect(r.body.results).toEqual([
      { emailAccountId: 6000, success: true, warmupStatus: 'active' },
      { emailAccountId: 6001, success: true, warmupStatus: 'active' },
      {
        emailAccountId: 6002,
        success: false,
        errorCode: 'forbidden',
        message: expect.any(String),
        reason: 'warming_capacity_reached',
      },
      { emailAccountId: 5000, success: false, errorCode: 'not_found', message: expect.any(String) },
    ]);
    const stop = await v1('POST', '/v1/warmup/bulk', { action: 'stop', emailAccountIds: [6001] }, K.org2Partner);
    expect(stop.body.results).toEqual([{ emailAccountId: 6001, success: true, warmupStatus: 'paused' }]);
    expect((await v1('POST', '/v1/warmup/6002/start', undefined, K.org2Partner)).status).toBe(200);
    for (const body of [
      { action: 'pause', emailAccountIds: [6000] },
      { action: 'start', emailAccountIds: [] },
      { action: 'start', emailAccountIds: Array.from({ length: 51 }, (_, i) => i + 1) },
    ]) {
      expect((await v1('POST', '/v1/warmup/bulk', body, K.org2Partner)).status).toBe(400);
    }
  });
});

describe('the planning job', () => {
  it('fills the plans of warming mailboxes and cancels those of mailboxes stopped elsewhere', async () => {
    const job = jobsOf(s.app.backend!).find((j) => j.name === 'v1.plan-warmup-sends')!;
    const count = async () =>
      (
        await s.db.query(
          `SELECT count(*)::int AS n FROM v1_scheduled_sends WHERE account_id = 5000 AND status = 'pending'`,
        )
      )[0].n;
    expect(await count()).toBe(0);
    await job.run();
    const planned = await count();
    expect(planned).toBeGreaterThan(0);
    await job.run();
    expect(await count()).toBe(planned);
    // Paused through another route (e.g. /v2): the next run cancels its pending sends.
    await s.db.query(`UPDATE accounts SET status = 'paused' WHERE id = 5000`);
    await job.run();
    expect(await count()).toBe(0);
  });
});

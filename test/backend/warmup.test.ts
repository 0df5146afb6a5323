// Warmup domain of /v2, through the gateway; the plan cap, the jobs and the partner-OAuth
// automatic start are driven directly.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, fetchRes, type Stack } from '../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { K } from '../fixtures/seed.js';
import { jobsOf } from '../../src/backend/jobs.js';
import { partnerOauthConnected, senderEspOf, tryAutoStart } from '../../src/backend/warmup/index.js';
import { applyPlanCap } from '../../src/access/service/plan-cap.js';
import { bandsFrom, parseBands } from '../../src/config/bands.js';

const W = '/v2/workspaces/100';
const A = (id: number) => `${W}/accounts/${id}`;
const clock = new FakeClock(); // 2026-11-22T12:00:00Z
let s: Stack;
let dns: DnsServer;

const acc = (id: number, emailAddress: string, extra: Record<string, unknown> = {}) => ({
  id,
  workspaceId: 100,
  emailAddress,
  fromName: emailAddress.split('@')[0],
  provider: 'smtp',
  status: 'active',
  verification: 'passed',
  warmupMaxLimit: 40,
  ...extra,
});

beforeAll(async () => {
  dns = await startDnsServer({
    'good.test': { txt: ['v=spf1 include:_spf.google.com -all'], mx: [{ exchange: 'mx.good.test', priority: 10 }] },
    '_dmarc.good.test': { txt: ['v=DMARC1; p=quarantine'] },
    'google._domainkey.good.test': { txt: ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA'] },
  });
  s = await startStack({
    clock,
    env: { DNS_RESOLVER: dns.address },
    extra: {
      organizations: [
        { id: 4, name: 'Delta', plan: 'scale', warmupCap: null },
        { id: 5, name: 'Epsilon', plan: 'free', warmupCap: null },
      ],
      workspaces: [
        { id: 400, organizationId: 4, name: 'Delta main' },
        { id: 500, organizationId: 5, name: 'Epsilon main' },
      ],
      accounts: [
        acc(5010, 'ny@acme.test', { timeZone: 'America/New_York', warmupCurrentLimit: 30 }),
        acc(5011, 'tokyo@acme.test', { timeZone: 'Asia/Tokyo', warmupCurrentLimit: 10 }),
        acc(5012, 'ready@acme.test', { warmupMaxLimit: 30 }),
        acc(5013, 'later@acme.test', { verification: 'pending' }),
        acc(5014, 'p@good.test', { provider: 'google' }),
        acc(5015, 'q@nodns.test', { provider: 'google' }),
        acc(5016, 'r@good.test', { provider: 'google', verification: 'pending' }),
        acc(5017, 'band@acme.test', { warmupMaxLimit: 80, warmupCurrentLimit: 50 }),
        acc(5018, 'off@acme.test', { status: 'disconnected' }),
        {
          id: 6001,
          workspaceId: 200,
          emailAddress: 'w1@beta.test',
          provider: 'google',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 10,
        },
        {
          id: 6002,
          workspaceId: 200,
          emailAddress: 'w2@beta.test',
          provider: 'google',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 10,
        },
        {
          id: 6003,
          workspaceId: 200,
          emailAddress: 'w3@beta.test',
          provider: 'google',
          status: 'active',
          verification: 'pending',
          warmupMaxLimit: 10,
        },
        {
          id: 7000,
          workspaceId: 400,
          emailAddress: 'd0@delta.test',
          provider: 'google',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 80,
          warmupCurrentLimit: 60,
        },
        {
          id: 7001,
          workspaceId: 400,
          emailAddress: 'd1@delta.test',
          provider: 'google',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 45,
          warmupCurrentLimit: 20,
        },
        {
          id: 7002,
          workspaceId: 400,
          emailAddress: 'd2@delta.test',
          provider: 'google',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 20,
          warmupCurrentLimit: 20,
        },
        {
          id: 8000,
          workspaceId: 500,
          emailAddress: 'e0@eps.test',
          provider: 'google',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 10,
        },
        {
          id: 8001,
          workspaceId: 500,
          emailAddress: 'e1@eps.test',
          provider: 'google',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 10,
        },
        {
          id: 8002,
          workspaceId: 500,
          emailAddress: 'e2@eps.test',
          provider: 'google',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 10,
        },
        {
          id: 7003,
          workspaceId: 400,
          emailAddress: 'd3@delta.test',
          provider: 'google',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 60,
          warmupCurrentLimit: 10,
        },
      ],
      warmupActivity: [
        { accountId: 5001, days: 1, perDay: 2 },
        { accountId: 5002, days: 1, perDay: 3 },
        { accountId: 6000, days: 1, perDay: 2 },
      ],
    },
  });
});
afterAll(async () => {
  await s?.close();
  await dns?.close();
});
// Each test starts in a fresh rate-limit window (Growth: 20 reads, 10 writes; Free: 5 reads, 2 writes).
beforeEach(() => clock.advance(60_000));

const req = (method: string, path: string, body?: unknown, key = K.wsAdmin) => s.request(method, path, { key, body });
const patch = (id: number, body: unknown) => req('PATCH', `${A(id)}/warmup/settings`, body);
const row = async (id: number) => (await s.db.query(`SELECT * FROM accounts WHERE id = $1`, [id]))[0];
const job = (name: string) => jobsOf(s.app.backend!).find((j) => j.name === name)!;

describe('GET warmup/settings', () => {
  it('returns the spec fields and never warmupLevel', async () => {
    const r = await req('GET', `${A(5000)}/warmup/settings`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      accountId: 5000,
      warmupMaxLimit: 40,
      warmupCurrentLimit: 20,
      warmupMinLimit: 5,
      maxWarmupPerAccount: 50,
      replyRateMode: 'LEVEL',
      replyRateCustom: false,
      replyRateMin: 30,
      replyRateMax: 40,
      threadTendencyMin: 20,
      threadTendencyMax: 30,
      pendingWarmupMaxLimit: null,
      pendingEffectiveAt: null,
    });
    expect(r.body.data).not.toHaveProperty('warmupLevel');
    expect((await req('GET', `${A(5100)}/warmup/settings`)).status).toBe(404);
  });

  it('automatic bands follow the current daily limit (config/warmup-bands.json)', async () => {
    const r = await req('GET', `${A(5017)}/warmup/settings`);
    expect(r.body.data).toMatchObject({
      warmupCurrentLimit: 50,
      replyRateMin: 35,
      replyRateMax: 45,
      threadTendencyMin: 25,
      threadTendencyMax: 35,
    });
    await s.db.query(`UPDATE accounts SET warmup_current_limit = 80 WHERE id = 5017`);
    const up = await req('GET', `${A(5017)}/warmup/settings`);
    expect(up.body.data).toMatchObject({
      replyRateMin: 40,
      replyRateMax: 50,
      threadTendencyMin: 30,
      threadTendencyMax: 40,
    });
    expect((await req('GET', A(5017))).body.data.replyRate).toBe(50);
    await s.db.query(`UPDATE accounts SET warmup_current_limit = 50 WHERE id = 5017`);
  });
});

describe('PATCH warmup/settings', () => {
  it('refuses warmupLevel and any unknown field with 400 invalid_request', async () => {
    for (const [body, field] of [
      [{ warmupLevel: 3 }, 'warmupLevel'],
      [{ warmupMaxLimit: 30, foo: 1 }, 'foo'],
      [{}, '(body)'],
    ] as const) {
      const r = await patch(5000, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field } });
    }
  });

  it('refuses warmupMaxLimit below 5, not an integer, or above the plan cap (naming the cap)', async () => {
    for (const v of [4, 0, 12.5, '20']) {
      const r = await patch(5000, { warmupMaxLimit: v });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'warmupMaxLimit' } });
    }
    const over = await patch(5000, { warmupMaxLimit: 51 });
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe('invalid_request');
    expect(over.body.error.message).toMatch(/maxWarmupPerAccount/);
    expect(over.body.error.message).toMatch(/50/);
    expect(over.body.error.details).toMatchObject({ field: 'warmupMaxLimit', maxWarmupPerAccount: 50 });
    expect((await patch(5000, { warmupMaxLimit: 50 })).status).toBe(200);
    expect((await patch(5000, { warmupMaxLimit: 5 })).status).toBe(200);
    expect((await patch(5100, { warmupMaxLimit: 20 })).status).toBe(404);
  });

  it('applies a raised max at once', async () => {
    const r = await patch(5012, { warmupMaxLimit: 45 });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ warmupMaxLimit: 45, pendingWarmupMaxLimit: null, pendingEffectiveAt: null });
    expect((await row(5012)).warmup_max_limit).toBe(45);
  });

  it("stores a lowered max pending until the mailbox's next local midnight", async () => {
    const r = await patch(5010, { warmupMaxLimit: 20 }); // New York: next midnight is 05:00Z on the 23rd
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      warmupMaxLimit: 40,
      warmupCurrentLimit: 30,
      pendingWarmupMaxLimit: 20,
      pendingEffectiveAt: '2026-11-23T05:00:00.000Z',
      timeZone: 'America/New_York',
    });
    const read = await req('GET', `${A(5010)}/warmup/settings`);
    expect(read.body.data).toMatchObject({ warmupMaxLimit: 40, pendingWarmupMaxLimit: 20 });
    expect((await req('GET', A(5010))).body.data).toMatchObject({
      warmupMaxLimit: 40,
      pendingWarmupMaxLimit: 20,
      pendingEffectiveAt: '2026-11-23T05:00:00.000Z',
    });
    // Raising back to (or above) the current max cancels the pending value and applies at once.
    const up = await patch(5010, { warmupMaxLimit: 42 });
    expect(up.body.data).toMatchObject({ warmupMaxLimit: 42, pendingWarmupMaxLimit: null, pendingEffectiveAt: null });
    const down = await patch(5010, { warmupMaxLimit: 25 });
    expect(down.body.data).toMatchObject({ warmupMaxLimit: 42, pendingWarmupMaxLimit: 25 });
  });

  it('the pending-limits job applies due limits (run by hand with the fake clock)', async () => {
    const r = await patch(5011, { warmupMaxLimit: 8 }); // Tokyo: 21:xx local, next midnight 15:00Z on the 22nd
    expect(r.body.data).toMatchObject({
      warmupMaxLimit: 40,
      warmupCurrentLimit: 10,
      pendingWarmupMaxLimit: 8,
      pendingEffectiveAt: '2026-11-22T15:00:00.000Z',
    });
    const run = job('warmup.apply-pending-limits');
    expect(run.intervalMs).toBeGreaterThan(0);
    await run.run();
    expect(await row(5011)).toMatchObject({ warmup_max_limit: 40, pending_max_limit: 8 });
    clock.t = Date.UTC(2026, 10, 22, 14, 59, 59);
    await run.run();
    expect(await row(5011)).toMatchObject({ warmup_max_limit: 40, pending_max_limit: 8 });
    clock.t = Date.UTC(2026, 10, 22, 15, 0, 0);
    await run.run();
    // The current limit never exceeds the new max.
    expect(await row(5011)).toMatchObject({
      warmup_max_limit: 8,
      warmup_current_limit: 8,
      pending_max_limit: null,
      pending_effective_at: null,
    });
    const read = await req('GET', `${A(5011)}/warmup/settings`);
    expect(read.body.data).toMatchObject({
      warmupMaxLimit: 8,
      warmupCurrentLimit: 8,
      pendingWarmupMaxLimit: null,
      replyRateMax: 30,
    });
  });

  it('a due limit is in force on reads even before the job runs', async () => {
    expect(await row(5010)).toMatchObject({ warmup_max_limit: 42, pending_max_limit: 25 });
    clock.t = Date.UTC(2026, 10, 23, 5, 0, 30);
    const r = await req('GET', `${A(5010)}/warmup/settings`);
    expect(r.body.data).toMatchObject({ warmupMaxLimit: 25, warmupCurrentLimit: 25, pendingWarmupMaxLimit: null });
  });

  it('sets a custom reply rate; replyRateMode LEVEL switches back to the band', async () => {
    const c = await patch(5017, { replyRate: 22.5 });
    expect(c.status).toBe(200);
    expect(c.body.data).toMatchObject({
      replyRateMode: 'CUSTOM',
      replyRateCustom: true,
      replyRate: 22.5,
      replyRateMin: 22.5,
      replyRateMax: 22.5,
      threadTendencyMin: 25,
    });
    expect((await req('GET', A(5017))).body.data.replyRate).toBe(22.5);
    const both = await patch(5017, { replyRateMode: 'LEVEL', replyRate: 10 });
    expect(both.status).toBe(400);
    expect(both.body.error.details.field).toBe('replyRate');
    expect((await patch(5017, { replyRateMode: 'BOGUS' })).status).toBe(400);
    const level = await patch(5017, { replyRateMode: 'LEVEL' });
    expect(level.body.data).toMatchObject({
      replyRateMode: 'LEVEL',
      replyRateCustom: false,
      replyRateMin: 35,
      replyRateMax: 45,
      replyRate: 45,
    });
    expect((await req('GET', A(5017))).body.data.replyRate).toBe(45);
    expect((await patch(5017, { replyRate: 101 })).status).toBe(400);
  });
});

describe('enable, pause, resume', () => {
  it('enables a verified mailbox: status warming; enabling again is a no-op', async () => {
    const r = await req('POST', `${A(5012)}/warmup/enable`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id: 5012, status: 'warming' });
    expect((await req('POST', `${A(5012)}/warmup/enable`)).body.data.status).toBe('warming');
    expect((await req('GET', A(5012))).body.data.status).toBe('warming');
  });

  it('409 mailbox_verification_pending while the check runs, and remembers the request', async () => {
    const r = await req('POST', `${A(5001)}/warmup/enable`);
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('mailbox_verification_pending');
    expect(await row(5001)).toMatchObject({ status: 'active', warmup_requested: true });
    expect((await req('GET', A(5001))).body.data.warmupRequested).toBe(true);
    // The check passes: warmup starts by itself.
    const v = await s.internal('POST', '/internal/accounts/5001/verification', { result: 'passed' });
    expect(v.status).toBe(200);
    expect(v.body.data).toMatchObject({
      id: 5001,
      verification: 'passed',
      status: 'warming',
      warmupRequested: false,
      autoStart: 'started',
    });
    expect(v.body.meta.request_id).toEqual(expect.any(String));
  });

  it('400 mailbox_verification_failed after a failed check (which withdraws a remembered request)', async () => {
    expect((await req('POST', `${A(5013)}/warmup/enable`)).status).toBe(409);
    const v = await s.internal('POST', '/internal/accounts/5013/verification', { result: 'failed' });
    expect(v.body.data).toMatchObject({
      verification: 'failed',
      status: 'active',
      warmupRequested: false,
      autoStart: null,
    });
    const r = await req('POST', `${A(5013)}/warmup/enable`);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('mailbox_verification_failed');
    const seeded = await req('POST', `${A(5002)}/warmup/resume`); // paused, failed check
    expect(seeded.status).toBe(400);
    expect(seeded.body.error.code).toBe('mailbox_verification_failed');
  });

  it('pauses and resumes', async () => {
    const p = await req('POST', `${A(5012)}/warmup/pause`);
    expect(p.status).toBe(200);
    expect(p.body.data.status).toBe('paused');
    expect((await req('POST', `${A(5012)}/warmup/pause`)).body.data.status).toBe('paused');
    const r = await req('POST', `${A(5012)}/warmup/resume`);
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe('warming');
  });

  it('409 conflict for moves the status does not allow; 404 for another workspace', async () => {
    const resume = await req('POST', `${A(5017)}/warmup/resume`); // active, never enabled
    expect(resume.status).toBe(409);
    expect(resume.body.error.code).toBe('conflict');
    const pause = await req('POST', `${A(5017)}/warmup/pause`);
    expect(pause.status).toBe(409);
    expect(pause.body.error.code).toBe('conflict');
    const off = await req('POST', `${A(5018)}/warmup/enable`); // disconnected
    expect(off.status).toBe(409);
    expect(off.body.error).toMatchObject({ code: 'conflict', details: { status: 'disconnected' } });
    expect((await req('POST', `${A(5100)}/warmup/enable`)).status).toBe(404);
    expect((await req('POST', `${A(5017)}/warmup/enable`, { force: true })).status).toBe(400);
  });

  it("403 warming_capacity_reached when the plan's warming cap is full; a remembered start waits for room", async () => {
    const key = K.org2Ws; // Free: warmingMailboxCap 2, and 6001, 6002 are warming
    const full = await req('POST', '/v2/workspaces/200/accounts/6000/warmup/enable', undefined, key);
    expect(full.status).toBe(403);
    expect(full.body.error).toMatchObject({
      code: 'warming_capacity_reached',
      details: { warmingMailboxCap: 2, warming: 2 },
    });
    expect((await row(6000)).status).toBe('active');
    expect((await req('POST', '/v2/workspaces/200/accounts/6003/warmup/enable', undefined, key)).status).toBe(409);
    // The check passes but the cap is full: no start, the request stays remembered.
    const v = await s.internal('POST', '/internal/accounts/6003/verification', { result: 'passed' });
    expect(v.body.data).toMatchObject({
      status: 'active',
      warmupRequested: true,
      autoStart: 'warming_capacity_reached',
    });
    clock.advance(60_000);
    expect((await req('POST', '/v2/workspaces/200/accounts/6001/warmup/pause', undefined, key)).body.data.status).toBe(
      'paused',
    );
    await job('warmup.auto-start').run();
    expect(await row(6003)).toMatchObject({ status: 'warming', warmup_requested: false });
    // Resuming also needs room.
    const resume = await req('POST', '/v2/workspaces/200/accounts/6001/warmup/resume', undefined, key);
    expect(resume.status).toBe(403);
    expect(resume.body.error.code).toBe('warming_capacity_reached');
  });
});

describe('warming cap under concurrency', () => {
  it('two starts racing for the last slot: exactly one wins', async () => {
    // Free: warmingMailboxCap 2; 8000 warms, so one slot is left for 8001 and 8002.
    await s.db.query(`UPDATE accounts SET warmup_requested = true WHERE id IN (8001, 8002)`);
    const results = await Promise.all([tryAutoStart(s.app.backend!, 8001), tryAutoStart(s.app.backend!, 8002)]);
    expect([...results].sort()).toEqual(['started', 'warming_capacity_reached']);
    const [{ n }] = await s.db.query(
      `SELECT count(*)::int AS n FROM accounts WHERE workspace_id = 500 AND status = 'warming'`,
    );
    expect(n).toBe(2);
  });
});

describe('POST /internal/accounts/{id}/verification', () => {
  it('needs the internal token and a strict body', async () => {
    const url = `${s.backendUrl}/internal/accounts/5000/verification`;
    const none = await fetchRes(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"result":"passed"}',
    });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthenticated');
    const wrong = await fetchRes(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer nope-nope-nope-nope' },
      body: '{"result":"passed"}',
    });
    expect(wrong.status).toBe(403);
    for (const body of [{ result: 'maybe' }, {}, { result: 'passed', extra: 1 }]) {
      const r = await s.internal('POST', '/internal/accounts/5000/verification', body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
    }
    const missing = await s.internal('POST', '/internal/accounts/999999/verification', { result: 'passed' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
  });
});

describe('partner OAuth automatic start', () => {
  it('starts warming without an enable call when DNS and the check pass', async () => {
    expect(await partnerOauthConnected(s.app.backend!, 5014)).toBe('started');
    expect(await row(5014)).toMatchObject({ status: 'warming' });
  });

  it('does not start while DNS fails', async () => {
    expect(await partnerOauthConnected(s.app.backend!, 5015)).toBe('dns_failed');
    expect(await row(5015)).toMatchObject({ status: 'active', auto_warmup: true });
  });

  it('starts when the check passes later', async () => {
    expect(await partnerOauthConnected(s.app.backend!, 5016)).toBe('not_eligible');
    expect((await row(5016)).status).toBe('active');
    const v = await s.internal('POST', '/internal/accounts/5016/verification', { result: 'passed' });
    expect(v.body.data).toMatchObject({ status: 'warming', autoStart: 'started' });
  });
});

describe('GET warmup/activity', () => {
  it('lists messages with senderEsp and the deprecated provider alias, page pagination, Deprecation and Sunset headers', async () => {
    const r = await req('GET', `${A(5000)}/warmup/activity?per_page=5`);
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(5);
    expect(r.body.pagination).toEqual({ page: 1, per_page: 5, total: 100, total_pages: 20, has_more: true });
    for (const item of r.body.data) {
      expect(item).toMatchObject({
        senderEsp: 'google',
        provider: 'google',
        accountId: 5000,
        outcome: expect.any(String),
        sentAt: expect.any(String),
      });
    }
    const times = r.body.data.map((i: any) => i.sentAt);
    expect([...times].sort().reverse()).toEqual(times);
    expect(r.headers.get('deprecation')).toBe(`@${Date.UTC(2026, 8, 28) / 1000}`);
    expect(r.headers.get('sunset')).toBe('Sun, 27 Dec 2026 00:00:00 GMT');
    const last = await req('GET', `${A(5000)}/warmup/activity?per_page=30&page=4`);
    expect(last.body.data).toHaveLength(10);
    expect(last.body.pagination.has_more).toBe(false);
  });

  it('maps the sender ESP: microsoft family, plain SMTP to other, else the lower-cased brand', async () => {
    expect((await req('GET', `${A(5001)}/warmup/activity`)).body.data[0]).toMatchObject({
      senderEsp: 'microsoft',
      provider: 'microsoft',
    });
    expect((await req('GET', `${A(5002)}/warmup/activity`)).body.data[0]).toMatchObject({
      senderEsp: 'other',
      provider: 'other',
    });
    const zoho = await req('GET', '/v2/workspaces/200/accounts/6000/warmup/activity', undefined, K.org2Ws);
    expect(zoho.body.data[0]).toMatchObject({ senderEsp: 'zoho', provider: 'zoho' });
    expect(['Gmail', 'GOOGLE', 'Outlook', 'office365', 'SMTP', 'Zoho', 'Yahoo'].map(senderEspOf)).toEqual([
      'google',
      'google',
      'microsoft',
      'microsoft',
      'other',
      'zoho',
      'yahoo',
    ]);
    expect((await req('GET', `${A(5100)}/warmup/activity`)).status).toBe(404);
    expect((await req('GET', `${A(5000)}/warmup/activity?per_page=101`)).status).toBe(400);
  });
});

describe('applyPlanCap (plan change)', () => {
  it("lowers max, current and pending above the new cap at once, inside the caller's transaction", async () => {
    const later = new Date(clock.now() + 86_400_000);
    await s.db.query(`UPDATE accounts SET pending_max_limit = 25, pending_effective_at = $1 WHERE id = 7001`, [later]);
    await s.db.query(`UPDATE accounts SET pending_max_limit = 40, pending_effective_at = $1 WHERE id = 7003`, [later]);
    // A rolled-back caller changes nothing.
    await expect(
      s.db.tx(async (q) => {
        await applyPlanCap(q, 4, 30);
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    expect((await row(7000)).warmup_max_limit).toBe(80);
    const n = await s.db.tx((q) => applyPlanCap(q, 4, 30));
    expect(n).toBe(3);
    expect(await row(7000)).toMatchObject({ warmup_max_limit: 30, warmup_current_limit: 30, pending_max_limit: null });
    expect(await row(7001)).toMatchObject({ warmup_max_limit: 30, warmup_current_limit: 20, pending_max_limit: 25 });
    expect(await row(7002)).toMatchObject({ warmup_max_limit: 20, warmup_current_limit: 20 });
    expect(await row(7003)).toMatchObject({
      warmup_max_limit: 30,
      warmup_current_limit: 10,
      pending_max_limit: null,
      pending_effective_at: null,
    });
    expect(await s.db.tx((q) => applyPlanCap(q, 4, 30))).toBe(0);
    expect(await s.db.tx((q) => applyPlanCap(q, 4, null))).toBe(0);
    // Other organizations are untouched.
    expect((await row(5017)).warmup_max_limit).toBe(80);
  });
});

describe('config/warmup-bands.json', () => {
  it('the shipped table loads; bad tables fail naming the field', () => {
    expect(bandsFrom('config/warmup-bands.json').forLimit(5).replyRate).toEqual({ min: 20, max: 30 });
    const band = (fromLimit: number, toLimit: number | null) => ({
      fromLimit,
      toLimit,
      replyRate: { min: 1, max: 2 },
      threadTendency: { min: 1, max: 2 },
    });
    expect(() => parseBands({ bands: [band(5, 9), band(11, null)] }, 'b.json')).toThrow(
      /b\.json bands\.1\.fromLimit: must be 10/,
    );
    expect(() => parseBands({ bands: [band(5, 9)] }, 'b.json')).toThrow(/bands\.0\.toLimit/);
    expect(() => parseBands({ bands: [band(6, null)] }, 'b.json')).toThrow(/bands\.0\.fromLimit/);
    expect(() => parseBands({ bands: [{ ...band(5, null), extra: 1 }] }, 'b.json')).toThrow(
      /bands\.0\.extra: unknown field/,
    );
    expect(() => parseBands({ bands: [{ ...band(5, null), replyRate: { min: 50, max: 10 } }] }, 'b.json')).toThrow(
      /replyRate/,
    );
  });
});

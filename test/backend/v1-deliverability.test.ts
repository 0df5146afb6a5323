// /v1 deliverability and reports through the gateway, against a local DNS server: setup score
// (cached, refresh recomputes, checks not run are omitted), live DNS health, deliverability score by
// date range and ESP, single/bulk/CSV reports, dashboard, health.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Res, type Stack } from '../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { K } from '../fixtures/seed.js';
import { jobsOf } from '../../src/backend/jobs.js';

// 2027-03-10 12:00 UTC; the seed's own warmup history (relative to the real date) is not used here.
const clock = new FakeClock(Date.UTC(2027, 2, 10, 12, 0, 0));
let s: Stack;
let dns: DnsServer;
let dnsClosed = false;
let spent = 0;

async function v1(method: string, path: string, body?: unknown, apiKey = K.partner): Promise<Res> {
  if (++spent > 20) {
    clock.advance(60_000);
    spent = 1;
  }
  return s.request(method, path, { apiKey, body, ip: '10.43.0.1' });
}

const GOOD = {
  'acme.test': { txt: ['v=spf1 include:_spf.google.com ~all'], mx: [{ exchange: 'mx.acme.test', priority: 10 }] },
  '_dmarc.acme.test': { txt: ['v=DMARC1; p=quarantine'] },
  'default._domainkey.acme.test': { txt: ['v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC'] },
};

beforeAll(async () => {
  dns = await startDnsServer(GOOD);
  s = await startStack({
    clock,
    env: { DNS_RESOLVER: dns.address },
    extra: {
      accounts: [
        {
          id: 5300,
          workspaceId: 100,
          emailAddress: 'rep@acme.test',
          fromName: 'Rep',
          provider: 'google',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 40,
        },
        {
          id: 5301,
          workspaceId: 101,
          emailAddress: 'rep2@acme.test',
          fromName: 'Rep2',
          provider: 'microsoft',
          status: 'error',
          verification: 'passed',
          warmupMaxLimit: 40,
        },
      ],
    },
  });
  // Known history for 5300: 2027-03-01 (google 4 inbox + 1 spam, microsoft 2 inbox + 1 bounced, yahoo 1 inbox + 1 spam),
  // 2027-03-03 (other: 2 inbox, one replied), and one on 2027-03-11 (after "now").
  const rows: [string, string, string, boolean][] = [
    ...Array.from(
      { length: 4 },
      () => ['2027-03-01T08:00:00Z', 'google', 'inbox', false] as [string, string, string, boolean],
    ),
    ['2027-03-01T09:00:00Z', 'google', 'spam', false],
    ['2027-03-01T10:00:00Z', 'microsoft', 'inbox', true],
    ['2027-03-01T10:00:00Z', 'microsoft', 'inbox', false],
    ['2027-03-01T23:59:59Z', 'microsoft', 'bounced', false],
    ['2027-03-01T11:00:00Z', 'yahoo', 'inbox', false],
    ['2027-03-01T11:00:00Z', 'other', 'spam', false],
    ['2027-03-03T00:00:00Z', 'other', 'inbox', true],
    ['2027-03-03T12:00:00Z', 'other', 'inbox', false],
    ['2027-03-11T00:00:00Z', 'google', 'inbox', false],
  ];
  for (const [at, esp, outcome, replied] of rows) {
    await s.db.query(
      `INSERT INTO warmup_messages (account_id, sent_at, recipient_esp, outcome, replied) VALUES (5300, $1, $2, $3, $4)`,
      [at, esp, outcome, replied],
    );
  }
});
afterAll(async () => {
  await s?.close();
  if (!dnsClosed) await dns?.close();
});

describe('setup score', () => {
  it('the first GET fills the cache; later GETs serve it without a lookup', async () => {
    const r = await v1('GET', '/v1/setup-score/5000');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      emailAccountId: 5000,
      emailAccountScore: 100,
      spf: true,
      dkim: true,
      dmarc: true,
      mx: true,
      domainBlacklist: { listed: 0, notListed: 3 },
      updatedAt: new Date(clock.now()).toISOString(),
    });
    // A Google mailbox has no known sending IP: that check did not run and is omitted.
    expect(r.body).not.toHaveProperty('ipBlacklist');
    expect(r.body).not.toHaveProperty('manualLastRefreshedAt');
    const before = dns.queries;
    dns.delete('acme.test');
    const again = await v1('GET', '/v1/setup-score/5000');
    expect(again.body).toEqual(r.body);
    expect(dns.queries).toBe(before);
  });

  it('refresh recomputes through the DNS and stamps manualLastRefreshedAt', async () => {
    clock.advance(5 * 60_000);
    const r = await v1('POST', '/v1/setup-score/5000/refresh');
    expect(r.status).toBe(200);
    // SPF and MX gone: 55 of the 90 points of the checks that ran (no IP check for this mailbox).
    expect(r.body).toMatchObject({ spf: false, mx: false, dkim: true, dmarc: true, emailAccountScore: 61 });
    expect(r.body.manualLastRefreshedAt).toBe(new Date(clock.now()).toISOString());
    expect(r.body.updatedAt).toBe(r.body.manualLastRefreshedAt);
    expect((await v1('GET', '/v1/setup-score/5000')).body).toEqual(r.body);
    dns.set('acme.test', GOOD['acme.test']);
    dns.set('acme.test.dbl.spamhaus.org', { txt: ['https://www.spamhaus.org/query/domain/acme.test'] });
    const listed = await v1('POST', '/v1/setup-score/5000/refresh');
    expect(listed.body.domainBlacklist).toEqual({ listed: 1, notListed: 2 });
    expect(listed.body.emailAccountScore).toBe(Math.round((100 * (80 + (10 * 2) / 3)) / 90));
    dns.delete('acme.test.dbl.spamhaus.org');
  });

  it('checks the sending IP of an SMTP mailbox against the IP lists', async () => {
    const made = await v1('POST', '/v1/email-accounts', {
      fromEmail: 'smtp@acme.test',
      smtp: { host: '192.0.2.10', port: 465, username: 'u', password: 'p', secure: true },
      imap: { host: '192.0.2.10', port: 993, username: 'u', password: 'p', secure: true },
    });
    expect(made.status).toBe(201);
    dns.set('10.2.0.192.zen.spamhaus.org', { txt: ['listed'] });
    const r = await v1('POST', `/v1/setup-score/${made.body.id}/refresh`);
    expect(r.body.ipBlacklist).toEqual({ listed: 1, notListed: 2 });
    const status = await v1('GET', `/v1/email-accounts/${made.body.id}/status`);
    expect(status.body.healthScore).toBe(r.body.emailAccountScore);
  });

  it('a job recomputes cache rows older than a day', async () => {
    await s.db.query(`INSERT INTO v1_setup_scores (account_id, score, updated_at) VALUES (5002, 3, $1)`, [
      new Date(clock.now() - 25 * 3600_000),
    ]);
    await s.db.query(`INSERT INTO v1_setup_scores (account_id, score, updated_at) VALUES (5100, 4, $1)`, [
      new Date(clock.now() - 3600_000),
    ]);
    await jobsOf(s.app.backend!)
      .find((j) => j.name === 'v1.refresh-setup-scores')!
      .run();
    const stale = (await v1('GET', '/v1/setup-score/5002')).body;
    expect(stale).toMatchObject({ emailAccountScore: 100, spf: true, updatedAt: new Date(clock.now()).toISOString() });
    expect(stale).not.toHaveProperty('manualLastRefreshedAt');
    expect((await v1('GET', '/v1/setup-score/5100')).body).toEqual({
      emailAccountId: 5100,
      emailAccountScore: 4,
      updatedAt: new Date(clock.now() - 3600_000).toISOString(),
    });
  });

  it('404 for an account of another organization', async () => {
    expect((await v1('GET', '/v1/setup-score/6000')).status).toBe(404);
    expect((await v1('POST', '/v1/setup-score/6000/refresh')).status).toBe(404);
  });
});

describe('DNS health', () => {
  it('is a live lookup each time', async () => {
    const r = await v1('GET', '/v1/dns-health/5001');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      emailAccountId: 5001,
      domain: 'acme.test',
      spf: 'pass',
      dkim: 'pass',
      dmarc: 'pass',
      mx: 'pass',
      cachedAt: new Date(clock.now()).toISOString(),
    });
    const before = dns.queries;
    dns.set('_dmarc.acme.test', { txt: ['v=DMARC1'] });
    dns.set('acme.test', { txt: ['v=spf1 +all'], mx: [] });
    const again = await v1('GET', '/v1/dns-health/5001');
    expect(again.body).toMatchObject({ spf: 'fail', dmarc: 'fail', mx: 'missing', dkim: 'pass' });
    expect(dns.queries).toBeGreaterThan(before);
    for (const [k, v] of Object.entries(GOOD)) dns.set(k, v);
    expect((await v1('GET', '/v1/dns-health/6000')).status).toBe(404);
  });
});

describe('deliverability score', () => {
  it('sums a date range by recipient ESP (google -> gmail, microsoft -> outlook, else other)', async () => {
    const r = await v1('POST', '/v1/deliverability-score/5300', { startDate: '2027-03-01', endDate: '2027-03-31' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      emailAccountId: 5300,
      totalDeliverabilityRate: 75,
      totalSentCount: 12,
      totalInboxCount: 9,
      totalSpamInboxCount: 2,
      gmail: { deliverabilityRate: 80, sentCount: 5, inboxCount: 4, spamCount: 1 },
      outlook: { deliverabilityRate: 66.67, sentCount: 3, inboxCount: 2, spamCount: 0 },
      other: { deliverabilityRate: 75, sentCount: 4, inboxCount: 3, spamCount: 1 },
    });
  });

  it('filters ESPs and days (UTC, inclusive)', async () => {
    const r = await v1('POST', '/v1/deliverability-score/5300', {
      startDate: '2027-03-02',
      endDate: '2027-03-03',
      esps: ['other'],
    });
    expect(r.body).toEqual({
      emailAccountId: 5300,
      totalDeliverabilityRate: 100,
      totalSentCount: 2,
      totalInboxCount: 2,
      totalSpamInboxCount: 0,
      other: { deliverabilityRate: 100, sentCount: 2, inboxCount: 2, spamCount: 0 },
    });
    const none = await v1('POST', '/v1/deliverability-score/5300', { startDate: '2026-01-01', endDate: '2026-01-01' });
    expect(none.body).toMatchObject({
      totalDeliverabilityRate: 0,
      totalSentCount: 0,
      gmail: { deliverabilityRate: 0, sentCount: 0, inboxCount: 0, spamCount: 0 },
    });
  });

  it('refuses bad ranges and ESPs; 404 for a foreign account', async () => {
    const bad: [unknown, string][] = [
      [{ startDate: '2027-02-30', endDate: '2027-03-01' }, 'startDate'],
      [{ startDate: '2027-03-05', endDate: '2027-03-01' }, 'startDate'],
      [{ startDate: '2025-01-01', endDate: '2027-03-01' }, 'endDate'],
      [{ startDate: '2027-03-01', endDate: '2027-03-02', esps: ['yahoo'] }, 'esps.0'],
      [{ startDate: '2027-03-01', endDate: '2027-03-02', esps: [] }, 'esps'],
      [{ startDate: '2027-03-01' }, 'endDate'],
    ];
    for (const [body, field] of bad) {
      const r = await v1('POST', '/v1/deliverability-score/5300', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.details.field).toBe(field);
    }
    expect(
      (await v1('POST', '/v1/deliverability-score/6000', { startDate: '2027-03-01', endDate: '2027-03-02' })).status,
    ).toBe(404);
  });
});

describe('reports', () => {
  const day1 = {
    date: '2027-03-01',
    sent: 10,
    inbox: 7,
    received: 9,
    spam: 2,
    other: 0,
    undelivered: 1,
    replied: 1,
    deliverabilityRate: 70,
  };
  const zero = (date: string) => ({
    date,
    sent: 0,
    inbox: 0,
    received: 0,
    spam: 0,
    other: 0,
    undelivered: 0,
    replied: 0,
    deliverabilityRate: 0,
  });

  it('single report: every day of the range, zeros included', async () => {
    const r = await v1('GET', '/v1/reports/5300?from=2027-02-28&to=2027-03-03');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      emailAccountId: 5300,
      from: '2027-02-28',
      to: '2027-03-03',
      days: [
        zero('2027-02-28'),
        day1,
        zero('2027-03-02'),
        { ...zero('2027-03-03'), sent: 2, inbox: 2, received: 2, replied: 1, deliverabilityRate: 100 },
      ],
    });
    expect((await v1('GET', '/v1/reports/5300?from=2027-03-01')).status).toBe(400);
    expect((await v1('GET', '/v1/reports/5300?from=2027-03-01&to=2027-03-01&x=1')).status).toBe(400);
    expect((await v1('GET', '/v1/reports/6000?from=2027-03-01&to=2027-03-01')).status).toBe(404);
  });

  it('bulk: at most 50 accounts, in input order, not_found per foreign id', async () => {
    const r = await v1('POST', '/v1/reports/bulk', {
      emailAccountIds: [6000, 5300, 5301],
      from: '2027-03-01',
      to: '2027-03-01',
    });
    expect(r.status).toBe(200);
    expect(r.body.reports).toEqual([
      { emailAccountId: 6000, errorCode: 'not_found' },
      { emailAccountId: 5300, from: '2027-03-01', to: '2027-03-01', days: [day1] },
      { emailAccountId: 5301, from: '2027-03-01', to: '2027-03-01', days: [zero('2027-03-01')] },
    ]);
    const fiftyOne = Array.from({ length: 51 }, (_, i) => 9000 + i);
    expect(
      (await v1('POST', '/v1/reports/bulk', { emailAccountIds: fiftyOne, from: '2027-03-01', to: '2027-03-01' }))
        .status,
    ).toBe(400);
    expect(
      (
        await v1('POST', '/v1/reports/bulk', {
          emailAccountIds: fiftyOne.slice(0, 50),
          from: '2027-03-01',
          to: '2027-03-01',
        })
      ).status,
    ).toBe(200);
  });

  it('export: CSV of every account and day', async () => {
    const r = await v1('GET', '/v1/reports/export?from=2027-03-01&to=2027-03-02');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(r.headers.get('content-disposition')).toContain('attachment');
    expect(r.headers.get('x-ratelimit-limit')).toBe('20');
    const lines = r.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'emailAccountId,fromEmail,date,sent,inbox,received,spam,other,undelivered,replied,deliverabilityRate',
    );
    const [{ n }] = await s.db.query(
      `SELECT count(*)::int AS n FROM accounts a JOIN workspaces w ON w.id = a.workspace_id WHERE w.organization_id = 1`,
    );
    expect(lines).toHaveLength(1 + 2 * n);
    expect(lines).toContain('5300,rep@acme.test,2027-03-01,10,7,9,2,0,1,1,70');
    expect(lines.some((l) => l.startsWith('6000,'))).toBe(false);
    expect((await v1('GET', '/v1/reports/export?from=2027-03-02&to=2027-03-01')).status).toBe(400);
  });
});

describe('dashboard and health', () => {
  it("dashboard counts the organization's accounts", async () => {
    await s.db.query(
      `INSERT INTO v1_setup_scores (account_id, score, updated_at) VALUES (5001, 50, now()) ON CONFLICT (account_id) DO UPDATE SET score = 50`,
    );
    const [{ avg }] = await s.db.query(
      `SELECT avg(score)::float8 AS avg FROM v1_setup_scores s JOIN accounts a ON a.id = s.account_id JOIN workspaces w ON w.id = a.workspace_id WHERE w.organization_id = 1`,
    );
    const r = await v1('GET', '/v1/dashboard');
    expect(r.status).toBe(200);
    // Org 1: 5000 warming, 5002 paused, 5301 error; 5001, 5100, 5300 and the SMTP box active.
    expect(r.body).toEqual({
      totalAccounts: 7,
      activeWarmups: 1,
      pausedWarmups: 1,
      accountsWithErrors: 1,
      avgSetupScore: Math.round(avg * 10) / 10,
    });
    const other = await v1('GET', '/v1/dashboard', undefined, K.org2Partner);
    expect(other.body).toEqual({
      totalAccounts: 1,
      activeWarmups: 0,
      pausedWarmups: 0,
      accountsWithErrors: 0,
      avgSetupScore: 0,
    });
  });

  it('health answers ok', async () => {
    const r = await v1('GET', '/v1/health');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ok', database: 'ok', time: new Date(clock.now()).toISOString() });
  });

  it('a check that could not run is omitted, not false (DNS server gone)', async () => {
    await dns.close();
    dnsClosed = true;
    const r = await v1('POST', '/v1/setup-score/5001/refresh');
    expect(r.status).toBe(200);
    for (const k of ['spf', 'dkim', 'dmarc', 'mx', 'domainBlacklist', 'ipBlacklist'])
      expect(r.body).not.toHaveProperty(k);
    expect(r.body.emailAccountScore).toBe(0);
    const h = await v1('GET', '/v1/dns-health/5001');
    expect(h.status).toBe(503);
    expect(h.body.error_code).toBe('service_unavailable');
  });
});

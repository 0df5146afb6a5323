// Accounts domain of /v2, through the gateway.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { K } from '../fixtures/seed.js';

const W = '/v2/workspaces/100';
const clock = new FakeClock();
let s: Stack;
let dns: DnsServer;

beforeAll(async () => {
  dns = await startDnsServer({
    'acme.test': { txt: ['v=spf1 include:_spf.google.com ~all'], mx: [{ exchange: 'mx.acme.test', priority: 10 }] },
    '_dmarc.acme.test': { txt: ['v=DMARC1; p=reject'] },
    'google._domainkey.acme.test': { txt: ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA'] },
  });
  s = await startStack({
    clock,
    env: { DNS_RESOLVER: dns.address },
    extra: {
      accounts: [
        {
          id: 5003,
          workspaceId: 100,
          emailAddress: 'carl@custom.test',
          fromName: 'Carl',
          provider: 'smtp',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 80,
          warmupCurrentLimit: 50,
          replyRateCustom: 33,
        },
        {
          id: 5004,
          workspaceId: 100,
          emailAddress: 'dora@acme.test',
          fromName: 'Dora Smith',
          provider: 'google',
          status: 'error',
          verification: 'passed',
          warmupMaxLimit: 10,
          warmupCurrentLimit: 5,
        },
        {
          id: 5005,
          workspaceId: 100,
          emailAddress: 'x@nodns.test',
          fromName: 'Xena',
          provider: 'smtp',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 30,
        },
        {
          id: 5006,
          workspaceId: 100,
          emailAddress: 'gone@acme.test',
          fromName: 'Gone',
          provider: 'smtp',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 30,
        },
        {
          id: 5007,
          workspaceId: 100,
          emailAddress: 'del@acme.test',
          fromName: 'Del',
          provider: 'smtp',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 30,
        },
      ],
      tags: [{ id: 3, workspaceId: 101, name: 'other-ws' }],
    },
  });
});
let dnsClosed = false;
afterAll(async () => {
  await s?.close();
  if (!dnsClosed) await dns?.close();
});
// Each test starts in a fresh rate-limit window (Growth: 20 reads, 10 writes, 4 bulk per key).
beforeEach(() => clock.advance(60_000));

const get = (path: string, key = K.wsAdmin) => s.request('GET', path, { key });
const post = (path: string, body?: unknown, key = K.wsAdmin) => s.request('POST', path, { key, body });
const ids = (r: { body: any }) => r.body.data.map((a: any) => a.id);

describe('GET /accounts', () => {
  it('lists the workspace accounts in Envelope B with page pagination', async () => {
    const r = await get(`${W}/accounts`);
    expect(r.status).toBe(200);
    expect(r.body.meta.request_id).toBe(r.headers.get('x-request-id'));
    expect(ids(r)).toEqual([5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007]);
    expect(r.body.pagination).toEqual({ page: 1, per_page: 25, total: 8, total_pages: 1, has_more: false });
    const p2 = await get(`${W}/accounts?page=2&per_page=3`);
    expect(ids(p2)).toEqual([5003, 5004, 5005]);
    expect(p2.body.pagination).toEqual({ page: 2, per_page: 3, total: 8, total_pages: 3, has_more: true });
    // Another workspace of the same organization sees only its own.
    const other = await get('/v2/workspaces/101/accounts', K.wsOther);
    expect(ids(other)).toEqual([5100]);
  });

  it('reports replyRate: the custom value, or the top of the band for the current daily limit', async () => {
    const r = await get(`${W}/accounts`);
    const by = Object.fromEntries(r.body.data.map((a: any) => [a.id, a]));
    expect(by[5003]).toMatchObject({ replyRate: 33, replyRateMode: 'CUSTOM', warmupCurrentLimit: 50 });
    expect(by[5000]).toMatchObject({ replyRate: 40, replyRateMode: 'LEVEL', warmupCurrentLimit: 20 }); // band 20-39: 30..40
    expect(by[5004]).toMatchObject({ replyRate: 30, warmupCurrentLimit: 5 }); // band 5-9: 20..30
    expect(by[5000].tags).toEqual([{ id: 1, name: 'priority' }]);
    expect(by[5000]).not.toHaveProperty('warmupLevel');
  });

  it('filters by maxLimitMin / maxLimitMax (0..100), status, tag and search', async () => {
    expect(ids(await get(`${W}/accounts?maxLimitMin=30&maxLimitMax=40`))).toEqual([5000, 5001, 5005, 5006, 5007]);
    expect(ids(await get(`${W}/accounts?maxLimitMin=80`))).toEqual([5003]);
    expect(ids(await get(`${W}/accounts?maxLimitMax=10`))).toEqual([5004]);
    expect(ids(await get(`${W}/accounts?maxLimitMin=0&maxLimitMax=100`)).length).toBe(8);
    expect(ids(await get(`${W}/accounts?status=warming`))).toEqual([5000, 5003]);
    expect(ids(await get(`${W}/accounts?tag=priority`))).toEqual([5000]);
    expect(ids(await get(`${W}/accounts?tag=PRIORITY`))).toEqual([5000]);
    expect(ids(await get(`${W}/accounts?tag=1`))).toEqual([5000]);
    expect(ids(await get(`${W}/accounts?tag=nosuch`))).toEqual([]);
    expect(ids(await get(`${W}/accounts?search=bob`))).toEqual([5001]); // from name
    expect(ids(await get(`${W}/accounts?search=custom.test`))).toEqual([5003]); // email
    expect(ids(await get(`${W}/accounts?search=dora%20smith`))).toEqual([5004]);
    expect(ids(await get(`${W}/accounts?search=%25`))).toEqual([]); // a literal %, not a wildcard
  });

  it('refuses out-of-range or malformed filters with 400 invalid_request naming the field', async () => {
    for (const q of [
      'maxLimitMax=101',
      'maxLimitMin=-1',
      'maxLimitMin=abc',
      'maxLimitMin=1.5',
      'maxLimitMin=50&maxLimitMax=40',
      'status=sleeping',
      'per_page=101',
      'page=0',
      'bogus=1',
    ]) {
      const r = await get(`${W}/accounts?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
      expect(r.body.error.details.field).toBe(q.split('=')[0]);
    }
  });
});

describe('GET /accounts/{id}', () => {
  it('reads one account with the status vocabulary and replyRate', async () => {
    const r = await get(`${W}/accounts/5000`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      id: 5000,
      workspaceId: 100,
      emailAddress: 'a@acme.test',
      fromName: 'Ann',
      provider: 'google',
      status: 'warming',
      verification: 'passed',
      warmupMaxLimit: 40,
      warmupCurrentLimit: 20,
      warmupMinLimit: 5,
      replyRate: 40,
    });
  });

  it('answers 404 not_found for an account of another workspace or organization', async () => {
    for (const id of [5100, 6000, 999999]) {
      const r = await get(`${W}/accounts/${id}`);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('not_found');
    }
  });
});

describe('POST /accounts (SMTP/IMAP connect)', () => {
  const body = {
    emailAddress: 'new.box@acme.test',
    fromName: 'New Box',
    smtp: {
      host: 'smtp.acme.test',
      port: 587,
      username: 'new.box@acme.test',
      password: 'smtp-Secret-123',
      secure: false,
    },
    imap: {
      host: 'imap.acme.test',
      port: 993,
      username: 'new.box@acme.test',
      password: 'imap-Secret-456',
      secure: true,
    },
  };

  it('connects a mailbox, stores the passwords and never returns them', async () => {
    const r = await post(`${W}/accounts`, { ...body, timeZone: 'Europe/Berlin' });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({
      emailAddress: 'new.box@acme.test',
      fromName: 'New Box',
      provider: 'smtp',
      status: 'active',
      verification: 'pending',
      warmupMaxLimit: 40,
      warmupCurrentLimit: 5,
      timeZone: 'Europe/Berlin',
      workspaceId: 100,
      smtp: { host: 'smtp.acme.test', port: 587, username: 'new.box@acme.test', secure: false },
    });
    expect(r.text).not.toContain('Secret');
    const id = r.body.data.id;
    const read = await get(`${W}/accounts/${id}`);
    expect(read.text).not.toContain('Secret');
    expect(read.body.data.imap).toEqual({
      host: 'imap.acme.test',
      port: 993,
      username: 'new.box@acme.test',
      secure: true,
    });
    const list = await get(`${W}/accounts?search=new.box`);
    expect(list.text).not.toContain('Secret');
    // Stored sealed, apart from the settings (src/backend/credentials/).
    const [row] = await s.db.query(
      `SELECT smtp->>'password' AS sp, imap->>'password' AS ip, smtp_password_sealed, imap_password_sealed FROM accounts WHERE id = $1`,
      [id],
    );
    expect(row).toMatchObject({ sp: null, ip: null });
    expect(s.app.backend!.credentials.open('smtp_password', row.smtp_password_sealed)).toBe('smtp-Secret-123');
    expect(s.app.backend!.credentials.open('imap_password', row.imap_password_sealed)).toBe('imap-Secret-456');
  });

  it('answers 409 conflict for an address that exists anywhere (any case, any organization)', async () => {
    for (const emailAddress of ['A@ACME.TEST', 'e@beta.test', 'd@acme.test']) {
      const r = await post(`${W}/accounts`, { ...body, emailAddress });
      expect(r.status, emailAddress).toBe(409);
      expect(r.body.error.code).toBe('conflict');
    }
  });

  it('validates the body strictly', async () => {
    const cases: [unknown, string][] = [
      [{ ...body, emailAddress: 'x1@acme.test', provider: 'google' }, 'provider'],
      [{ ...body, emailAddress: 'not-an-email' }, 'emailAddress'],
      [{ ...body, emailAddress: 'x2@acme.test', smtp: { ...body.smtp, port: 70000 } }, 'smtp.port'],
      [{ ...body, emailAddress: 'x3@acme.test', imap: undefined }, 'imap'],
      [{ ...body, emailAddress: 'x4@acme.test', smtp: { ...body.smtp, token: 'x' } }, 'smtp.token'],
      [{ ...body, emailAddress: 'x5@acme.test', timeZone: 'Mars/Olympus' }, 'timeZone'],
    ];
    for (const [b, field] of cases) {
      const r = await post(`${W}/accounts`, b);
      expect(r.status, field).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field } });
    }
  });

  it('caps the default max at the plan maxWarmupPerAccount (Free: 10)', async () => {
    const r = await post('/v2/workspaces/200/accounts', { ...body, emailAddress: 'small@beta.test' }, K.org2Ws);
    expect(r.status).toBe(201);
    expect(r.body.data.warmupMaxLimit).toBe(10);
  });
});

describe('disconnect and delete', () => {
  it('disconnects: status disconnected, visible in reads and the status filter', async () => {
    const r = await post(`${W}/accounts/5006/disconnect`);
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe('disconnected');
    expect((await get(`${W}/accounts/5006`)).body.data.status).toBe('disconnected');
    expect(ids(await get(`${W}/accounts?status=disconnected`))).toEqual([5006]);
    expect((await post(`${W}/accounts/5100/disconnect`)).status).toBe(404);
  });

  it('deletes an account; it is gone afterwards', async () => {
    const r = await s.request('DELETE', `${W}/accounts/5007`, { key: K.wsAdmin });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ id: 5007, emailAddress: 'del@acme.test', deleted: true });
    expect((await get(`${W}/accounts/5007`)).status).toBe(404);
    const again = await s.request('DELETE', `${W}/accounts/5007`, { key: K.wsAdmin });
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
    // Another workspace's account cannot be deleted through this one.
    expect((await s.request('DELETE', `${W}/accounts/5100`, { key: K.wsAdmin })).status).toBe(404);
    expect((await s.db.query(`SELECT 1 FROM accounts WHERE id = 5100`)).length).toBe(1);
  });
});

describe('DNS and setup score (live lookups)', () => {
  it('GET /dns looks the sending domain up live', async () => {
    const before = dns.queries;
    const r = await get(`${W}/accounts/5000/dns`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      accountId: 5000,
      domain: 'acme.test',
      spf: 'pass',
      dkim: 'pass',
      dmarc: 'pass',
      mx: 'pass',
    });
    expect(dns.queries).toBeGreaterThan(before);
    // A change in DNS shows at once.
    dns.set('_dmarc.acme.test', { txt: [] });
    expect((await get(`${W}/accounts/5000/dns`)).body.data.dmarc).toBe('missing');
    dns.set('_dmarc.acme.test', { txt: ['v=DMARC1; p=reject'] });
    const none = await get(`${W}/accounts/5005/dns`);
    expect(none.body.data).toMatchObject({
      domain: 'nodns.test',
      spf: 'missing',
      dkim: 'missing',
      dmarc: 'missing',
      mx: 'missing',
    });
    expect((await get(`${W}/accounts/5100/dns`)).status).toBe(404);
  });

  it('GET /setup-score scores 0..100 from the DNS checks and the mailbox check', async () => {
    const full = await get(`${W}/accounts/5000/setup-score`);
    expect(full.status).toBe(200);
    expect(full.body.data).toMatchObject({
      accountId: 5000,
      score: 100,
      checks: { spf: 'pass', dkim: 'pass', dmarc: 'pass', mx: 'pass', verification: 'passed' },
    });
    expect((await get(`${W}/accounts/5001/setup-score`)).body.data.score).toBe(70); // verification pending
    expect((await get(`${W}/accounts/5005/setup-score`)).body.data.score).toBe(30); // no DNS records
    expect((await get(`${W}/accounts/6000/setup-score`)).status).toBe(404);
  });

  it('answers 503 service_unavailable when DNS cannot answer', async () => {
    await dns.close();
    dnsClosed = true;
    const r = await get(`${W}/accounts/5000/dns`);
    expect(r.status).toBe(503);
    expect(r.body.error).toMatchObject({ code: 'service_unavailable', details: { domain: 'acme.test' } });
    expect((await get(`${W}/accounts/5000/setup-score`)).status).toBe(503);
  });
});

describe('bulk routes (1 to 50 ids, bulk bucket)', () => {
  it('bulk-status answers per id in input order, with an error for ids not in the workspace', async () => {
    const r = await post(`${W}/accounts/bulk-status`, { accountIds: [5002, 9999, 5000, 5100] });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ratelimit-limit')).toBe('4');
    expect(r.body.data.map((x: any) => x.accountId)).toEqual([5002, 9999, 5000, 5100]);
    expect(r.body.data[0]).toMatchObject({ status: 'paused', verification: 'failed' });
    expect(r.body.data[2]).toMatchObject({ status: 'warming', replyRate: 40 });
    expect(r.body.data[1]).toEqual({ accountId: 9999, error: { code: 'not_found', message: expect.any(String) } });
    expect(r.body.data[3].error.code).toBe('not_found');
  });

  it('bulk-status refuses 0 or 51 ids', async () => {
    const many = Array.from({ length: 51 }, (_, i) => 5000 + i);
    for (const accountIds of [[], many]) {
      const r = await post(`${W}/accounts/bulk-status`, { accountIds });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'accountIds' } });
    }
    expect((await post(`${W}/accounts/bulk-status`, { accountIds: many.slice(0, 50) })).status).toBe(200);
  });

  it('bulk/tags sets those tags on each account, per-id errors for foreign ids', async () => {
    const r = await post(`${W}/accounts/bulk/tags`, { accountIds: [5001, 5100, 5002], tagIds: [2, 1] });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([
      {
        accountId: 5001,
        tags: [
          { id: 1, name: 'priority' },
          { id: 2, name: 'sales' },
        ],
      },
      { accountId: 5100, error: { code: 'not_found', message: expect.any(String) } },
      {
        accountId: 5002,
        tags: [
          { id: 1, name: 'priority' },
          { id: 2, name: 'sales' },
        ],
      },
    ]);
    expect((await get(`${W}/accounts/5002`)).body.data.tags).toEqual([
      { id: 1, name: 'priority' },
      { id: 2, name: 'sales' },
    ]);
    // Setting replaces: [2] leaves only sales.
    const again = await post(`${W}/accounts/bulk/tags`, { accountIds: [5002], tagIds: [2] });
    expect(again.body.data).toEqual([{ accountId: 5002, tags: [{ id: 2, name: 'sales' }] }]);
  });

  it('bulk/tags refuses unknown tag ids (naming them) and more than 50 accounts', async () => {
    const r = await post(`${W}/accounts/bulk/tags`, { accountIds: [5001], tagIds: [1, 3, 777] });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      code: 'invalid_request',
      details: { field: 'tagIds', unknownTagIds: [3, 777] },
    });
    expect(r.body.error.message).toContain('777');
    const many = Array.from({ length: 51 }, (_, i) => 5000 + i);
    const big = await post(`${W}/accounts/bulk/tags`, { accountIds: many, tagIds: [1] });
    expect(big.status).toBe(400);
    expect(big.body.error.details.field).toBe('accountIds');
  });
});

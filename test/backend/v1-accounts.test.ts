// /v1 email accounts through the gateway: list (search, sort, status, tags, paging), connect,
// oauth (501), status, bulk status, bulk delete, tag assign/unassign, disconnect, delete.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Res, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

const clock = new FakeClock(Date.now());
let s: Stack;
let spent = 0;

/** One /v1 call; moves the fake clock to the next window before the partner key's 20/min run out. */
async function v1(method: string, path: string, body?: unknown, apiKey = K.partner): Promise<Res> {
  if (++spent > 20) {
    clock.advance(60_000);
    spent = 1;
  }
  return s.request(method, path, { apiKey, body, ip: '10.41.0.1' });
}

const smtpBody = (email: string, extra: Record<string, unknown> = {}) => ({
  fromEmail: email,
  fromName: 'New Box',
  smtp: { host: 'smtp.acme.test', port: 587, username: email, password: 'pw-1', secure: false },
  imap: { host: 'imap.acme.test', port: 993, username: email, password: 'pw-1', secure: true },
  ...extra,
});

beforeAll(async () => {
  s = await startStack({
    clock,
    extra: {
      workspaces: [{ id: 102, organizationId: 1, name: 'Gone', deleted: true }],
      tags: [{ id: 10, workspaceId: 101, name: 'east' }],
      accounts: [
        {
          id: 5003,
          workspaceId: 100,
          emailAddress: 'zed@acme.test',
          fromName: 'Zed Error',
          provider: 'zoho',
          status: 'error',
          verification: 'passed',
          warmupMaxLimit: 20,
        },
        {
          id: 5004,
          workspaceId: 100,
          emailAddress: 'exp@acme.test',
          fromName: 'Axel',
          provider: 'google',
          status: 'auth-expired',
          verification: 'passed',
          warmupMaxLimit: 20,
          tagIds: [2],
        },
        {
          id: 5101,
          workspaceId: 101,
          emailAddress: 'f@acme.test',
          fromName: 'Fay',
          provider: 'microsoft',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 20,
          tagIds: [10],
        },
        {
          id: 5200,
          workspaceId: 102,
          emailAddress: 'ghost@acme.test',
          fromName: 'Ghost',
          provider: 'google',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 20,
        },
      ],
      providerWorkspaces: [
        { id: 77, organizationId: 1, workspaceId: 101, provider: 'google', adminEmail: 'admin@acme.test' },
      ],
    },
  });
  // Distinct creation times (oldest first by id) so the default sort is observable.
  await s.db.query(`UPDATE accounts SET created_at = now() - make_interval(mins => 10000 - id)`);
  await s.db.query(`UPDATE accounts SET provider_workspace_id = 77 WHERE id = 5100`);
});
afterAll(async () => s?.close());

describe('GET /v1/email-accounts', () => {
  it('lists every account of the live workspaces, newest first, with the spec fields', async () => {
    const r = await v1('GET', '/v1/email-accounts');
    expect(r.status).toBe(200);
    expect(r.body.items.map((i: any) => i.id)).toEqual([5101, 5100, 5004, 5003, 5002, 5001, 5000]);
    expect(r.body).toMatchObject({ total: 7, page: 1, limit: 20, totalPages: 1 });
    const a = r.body.items.find((i: any) => i.id === 5000);
    expect(a).toEqual({
      id: 5000,
      fromEmail: 'a@acme.test',
      fromName: 'Ann',
      type: 'gmail',
      status: 'warming',
      createdAt: expect.any(String),
      warmupScore: expect.any(Number),
      outreachReadinessStatus: 'readyForOutreach',
      workspaceId: null,
      tags: ['priority'],
    });
    expect(a.warmupScore).toBeGreaterThanOrEqual(85);
    const d = r.body.items.find((i: any) => i.id === 5100);
    expect(d).toMatchObject({ type: 'gmail', workspaceId: '77', warmupScore: 0, outreachReadinessStatus: 'notReady' });
    expect(r.body.items.find((i: any) => i.id === 5001).type).toBe('outlook');
    expect(r.body.items.find((i: any) => i.id === 5002).type).toBe('smtp');
    expect(r.body.items.find((i: any) => i.id === 5003)).toMatchObject({
      type: 'zoho',
      status: 'error',
      outreachReadinessStatus: 'needsAttention',
    });
    // Another organization's account (6000) and the soft-deleted workspace's (5200) never appear.
    expect(r.body.items.some((i: any) => i.id === 6000 || i.id === 5200)).toBe(false);
  });

  it('searches email or name, case-insensitively', async () => {
    expect((await v1('GET', '/v1/email-accounts?search=ZED')).body.items.map((i: any) => i.id)).toEqual([5003]);
    expect((await v1('GET', '/v1/email-accounts?search=axel')).body.items.map((i: any) => i.id)).toEqual([5004]);
    expect((await v1('GET', '/v1/email-accounts?search=%25')).body.total).toBe(0);
  });

  it('sorts by createdAt, fromEmail, fromName in either direction', async () => {
    const ids = async (q: string) =>
      (await v1('GET', `/v1/email-accounts?${q}`)).body.items.map((i: any) => i.fromEmail);
    expect(await ids('sort=fromEmail&sortBy=ASC')).toEqual([
      'a@acme.test',
      'b@acme.test',
      'c@acme.test',
      'd@acme.test',
      'exp@acme.test',
      'f@acme.test',
      'zed@acme.test',
    ]);
    expect(await ids('sort=fromName&sortBy=DESC')).toEqual([
      'zed@acme.test',
      'f@acme.test',
      'd@acme.test',
      'c@acme.test',
      'b@acme.test',
      'exp@acme.test',
      'a@acme.test',
    ]);
    expect((await ids('sort=createdAt&sortBy=ASC'))[0]).toBe('a@acme.test');
  });

  it('filters by each of the five status values; anything else is 400', async () => {
    const cases: [string, number[]][] = [
      ['active', [5101, 5100, 5001]],
      ['warming', [5000]],
      ['paused', [5002]],
      ['error', [5003]],
      ['auth-expired', [5004]],
    ];
    for (const [status, expected] of cases) {
      const r = await v1('GET', `/v1/email-accounts?status=${status}`);
      expect(
        r.body.items.map((i: any) => i.id),
        status,
      ).toEqual(expected);
    }
    const bad = await v1('GET', '/v1/email-accounts?status=disconnected');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error_code: 'invalid_request', details: { field: 'status' } });
  });

  it('matches any of repeated tags', async () => {
    const r = await v1('GET', '/v1/email-accounts?tags=priority&tags=EAST');
    expect(r.body.items.map((i: any) => i.id)).toEqual([5101, 5000]);
    expect((await v1('GET', '/v1/email-accounts?tags=nope')).body.total).toBe(0);
  });

  it('pages with page and limit (1 to 100) and refuses unknown parameters', async () => {
    const p2 = await v1('GET', '/v1/email-accounts?limit=3&page=2');
    expect(p2.body).toMatchObject({ total: 7, page: 2, limit: 3, totalPages: 3 });
    expect(p2.body.items.map((i: any) => i.id)).toEqual([5003, 5002, 5001]);
    expect((await v1('GET', '/v1/email-accounts?limit=100')).status).toBe(200);
    for (const q of ['limit=0', 'limit=101', 'page=0', 'page=x', 'sort=id', 'sortBy=UP', 'color=red']) {
      const r = await v1('GET', `/v1/email-accounts?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error_code).toBe('invalid_request');
    }
  });
});

describe('connect, oauth, status', () => {
  it('connects an SMTP/IMAP mailbox into the oldest live workspace', async () => {
    const r = await v1('POST', '/v1/email-accounts', smtpBody('new@acme.test'));
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      fromEmail: 'new@acme.test',
      fromName: 'New Box',
      type: 'smtp',
      status: 'active',
      workspaceId: null,
      tags: [],
    });
    const [row] = await s.db.query(
      `SELECT workspace_id, provider, verification, warmup_max_limit, time_zone, smtp, imap FROM accounts WHERE id = $1`,
      [r.body.id],
    );
    expect(row).toEqual({
      workspace_id: 100,
      provider: 'smtp',
      verification: 'pending',
      warmup_max_limit: 40,
      time_zone: 'UTC',
      // The passwords are stored sealed, apart from the settings (src/backend/credentials/).
      smtp: { host: 'smtp.acme.test', port: 587, username: 'new@acme.test', secure: false },
      imap: { host: 'imap.acme.test', port: 993, username: 'new@acme.test', secure: true },
    });
    const tz = await v1('POST', '/v1/email-accounts', smtpBody('tz1@acme.test', { timeZone: 'Asia/Kolkata' }));
    expect(tz.status).toBe(201);
    expect((await s.db.query(`SELECT time_zone FROM accounts WHERE id = $1`, [tz.body.id]))[0].time_zone).toBe(
      'Asia/Kolkata',
    );
    expect(
      (await v1('POST', '/v1/email-accounts', smtpBody('tz2@acme.test', { timeZone: 'Nowhere/City' }))).body.details
        .field,
    ).toBe('timeZone');
    const st = await v1('GET', `/v1/email-accounts/${r.body.id}/status`);
    expect(st.body).toMatchObject({
      emailAccountId: r.body.id,
      authStatus: 'connected',
      warmupStatus: 'inactive',
      healthScore: null,
      connectionError: null,
    });
  });

  it('connects into a provider workspace of the organization, named as a string', async () => {
    const r = await v1('POST', '/v1/email-accounts', smtpBody('pw@acme.test', { workspaceId: '77' }));
    expect(r.status).toBe(201);
    expect(r.body.workspaceId).toBe('77');
    const [row] = await s.db.query(`SELECT workspace_id FROM accounts WHERE id = $1`, [r.body.id]);
    expect(row.workspace_id).toBe(101);
    expect((await v1('POST', '/v1/email-accounts', smtpBody('pw2@acme.test', { workspaceId: '999' }))).status).toBe(
      404,
    );
  });

  it('refuses a duplicate address, unknown fields and missing servers', async () => {
    const dup = await v1('POST', '/v1/email-accounts', smtpBody('A@acme.test'));
    expect(dup.status).toBe(409);
    expect(dup.body.error_code).toBe('conflict');
    const unknown = await v1('POST', '/v1/email-accounts', smtpBody('x1@acme.test', { refreshToken: 'x' }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.details.field).toBe('refreshToken');
    const noImap = await v1('POST', '/v1/email-accounts', { ...smtpBody('x2@acme.test'), imap: undefined });
    expect(noImap.status).toBe(400);
    expect(noImap.body.details.field).toBe('imap');
    const badPort = await v1(
      'POST',
      '/v1/email-accounts',
      smtpBody('x3@acme.test', { smtp: { host: 'h', port: 70000, username: 'u', password: 'p', secure: true } }),
    );
    expect(badPort.body.details.field).toBe('smtp.port');
  });

  it('answers 501 not_implemented on the oauth route', async () => {
    const r = await v1('POST', '/v1/email-accounts/oauth', { provider: 'microsoft' });
    expect(r.status).toBe(501);
    expect(r.body).toEqual({ error_code: 'not_implemented', message: expect.any(String), details: {} });
  });

  it('reads one status; 404 not_found for an account of another organization or none', async () => {
    const r = await v1('GET', '/v1/email-accounts/5000/status');
    expect(r.body).toEqual({
      emailAccountId: 5000,
      fromEmail: 'a@acme.test',
      type: 'gmail',
      authStatus: 'connected',
      warmupStatus: 'active',
      healthScore: null,
      warmupScore: expect.any(Number),
      outreachReadinessStatus: 'readyForOutreach',
      connectionError: null,
      lastConnectedAt: expect.any(String),
      workspaceId: null,
    });
    expect((await v1('GET', '/v1/email-accounts/5004/status')).body.authStatus).toBe('expired');
    for (const id of [6000, 5200, 987654]) {
      const nf = await v1('GET', `/v1/email-accounts/${id}/status`);
      expect(nf.status).toBe(404);
      expect(nf.body).toEqual({
        error_code: 'not_found',
        message: expect.any(String),
        details: { emailAccountId: id },
      });
    }
  });
});

describe('bulk status and bulk delete', () => {
  it('answers bulk status in the order of the input ids, not_found for foreign ids', async () => {
    const r = await v1('POST', '/v1/email-accounts/bulk-status', { emailAccountIds: [5002, 6000, 5000] });
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: any) => x.emailAccountId)).toEqual([5002, 6000, 5000]);
    expect(r.body.results[1]).toEqual({ emailAccountId: 6000, errorCode: 'not_found' });
    expect(r.body.results[0]).toMatchObject({ warmupStatus: 'paused', type: 'smtp' });
  });

  it('takes 1 to 50 distinct ids', async () => {
    const fifty = Array.from({ length: 50 }, (_, i) => 7000 + i);
    expect((await v1('POST', '/v1/email-accounts/bulk-status', { emailAccountIds: fifty })).status).toBe(200);
    for (const ids of [[], [...fifty, 7050], [5000, 5000], ['5000']]) {
      const r = await v1('POST', '/v1/email-accounts/bulk-status', { emailAccountIds: ids });
      expect(r.status).toBe(400);
      expect(r.body.error_code).toBe('invalid_request');
    }
  });

  it('bulk delete takes at most 20 ids, deletes permanently, and reports per item', async () => {
    const many = Array.from({ length: 21 }, (_, i) => 7000 + i);
    expect((await v1('POST', '/v1/email-accounts/bulk-delete', { emailAccountIds: many })).status).toBe(400);
    const made = await v1('POST', '/v1/email-accounts', smtpBody('gone1@acme.test'));
    const r = await v1('POST', '/v1/email-accounts/bulk-delete', { emailAccountIds: [made.body.id, 6000, 5200] });
    expect(r.status).toBe(200);
    expect(r.body.results).toEqual([
      { emailAccountId: made.body.id, deleted: true },
      { emailAccountId: 6000, deleted: false, errorCode: 'not_found' },
      { emailAccountId: 5200, deleted: false, errorCode: 'not_found' },
    ]);
    expect(await s.db.query(`SELECT id FROM accounts WHERE id = $1`, [made.body.id])).toEqual([]);
    expect((await s.db.query(`SELECT id FROM accounts WHERE id IN (6000, 5200)`)).length).toBe(2);
  });
});

describe('tags', () => {
  it("assign is additive and creates unknown names in each account's workspace", async () => {
    const r = await v1('POST', '/v1/email-accounts/tags/assign', {
      emailAccountIds: [5001, 5101],
      tags: ['Sales', 'vip', 'VIP'],
    });
    expect(r.status).toBe(200);
    expect(r.body.map((i: any) => [i.id, i.tags])).toEqual([
      [5001, ['sales', 'vip']],
      [5101, ['east', 'Sales', 'vip']],
    ]);
    // "Sales" matched workspace 100's "sales"; workspace 101 got new "Sales" and "vip" tags.
    const tags = await s.db.query(
      `SELECT workspace_id, name FROM tags WHERE lower(name) IN ('sales', 'vip') ORDER BY workspace_id, name`,
    );
    expect(tags).toEqual([
      { workspace_id: 100, name: 'sales' },
      { workspace_id: 100, name: 'vip' },
      { workspace_id: 101, name: 'Sales' },
      { workspace_id: 101, name: 'vip' },
    ]);
    const again = await v1('POST', '/v1/email-accounts/tags/assign', { emailAccountIds: [5001], tags: ['priority'] });
    expect(again.body[0].tags).toEqual(['priority', 'sales', 'vip']);
  });

  it('unassign removes only the listed names and ignores unknown or unassigned ones', async () => {
    const r = await v1('POST', '/v1/email-accounts/tags/unassign', {
      emailAccountIds: [5001],
      tags: ['VIP', 'never-made', 'east'],
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual([expect.objectContaining({ id: 5001, tags: ['priority', 'sales'] })]);
    // The tag itself stays; 5101 keeps its own vip.
    expect((await v1('GET', '/v1/email-accounts?tags=vip')).body.items.map((i: any) => i.id)).toEqual([5101]);
  });

  it('is all-or-nothing: an account of another organization is 404 and nothing changes', async () => {
    const r = await v1('POST', '/v1/email-accounts/tags/assign', { emailAccountIds: [5002, 6000], tags: ['x-new'] });
    expect(r.status).toBe(404);
    expect(r.body.error_code).toBe('not_found');
    expect(await s.db.query(`SELECT id FROM tags WHERE name = 'x-new'`)).toEqual([]);
    expect((await v1('POST', '/v1/email-accounts/tags/assign', { emailAccountIds: [5002], tags: [] })).status).toBe(
      400,
    );
    expect((await v1('POST', '/v1/email-accounts/tags/assign', { emailAccountIds: [5002] })).status).toBe(400);
  });
});

describe('disconnect and delete', () => {
  it('disconnects: auth disconnected, listed as paused', async () => {
    const made = await v1('POST', '/v1/email-accounts', smtpBody('dis@acme.test'));
    const r = await v1('POST', `/v1/email-accounts/${made.body.id}/disconnect`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      emailAccountId: made.body.id,
      authStatus: 'disconnected',
      warmupStatus: 'inactive',
      outreachReadinessStatus: 'needsAttention',
    });
    const [row] = await s.db.query(`SELECT status, warmup_requested FROM accounts WHERE id = $1`, [made.body.id]);
    expect(row).toEqual({ status: 'disconnected', warmup_requested: false });
    const list = await v1('GET', '/v1/email-accounts?status=paused&search=dis@');
    expect(list.body.items).toEqual([expect.objectContaining({ id: made.body.id, status: 'paused' })]);
    expect((await v1('POST', '/v1/email-accounts/6000/disconnect')).status).toBe(404);
  });

  it('deletes permanently; a second delete is 404', async () => {
    const made = await v1('POST', '/v1/email-accounts', smtpBody('del@acme.test'));
    await s.db.query(
      `INSERT INTO warmup_messages (account_id, sent_at, recipient_esp, outcome) VALUES ($1, now(), 'google', 'inbox')`,
      [made.body.id],
    );
    const r = await v1('DELETE', `/v1/email-accounts/${made.body.id}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ emailAccountId: made.body.id, deleted: true });
    expect(await s.db.query(`SELECT 1 FROM warmup_messages WHERE account_id = $1`, [made.body.id])).toEqual([]);
    expect((await v1('DELETE', `/v1/email-accounts/${made.body.id}`)).status).toBe(404);
    expect((await v1('DELETE', '/v1/email-accounts/6000')).status).toBe(404);
  });
});

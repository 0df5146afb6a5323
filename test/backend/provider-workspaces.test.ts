// Provider workspaces through the gateway, /v2 and /v1, against the fake Google Admin / Microsoft
// Graph server: registration checks, preview, sync (bulk import), status, scoping, and the
// deletion of a registration whose credentials fail at preview.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { startFakeProviders, type FakeProviders } from '../helpers/fake-providers.js';
import { K } from '../fixtures/seed.js';

const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 0));
let s: Stack;
let fp: FakeProviders;
const W = '/v2/workspaces/100/provider-workspaces';
const MS_TENANT = '6f1c2a4e-1111-4222-8333-944445555666';

const v2 = (method: string, path: string, body?: unknown, key = K.wsAdmin) =>
  s.request(method, path, { key, ip: '10.0.22.1', body });
const v1 = (method: string, path: string, body?: unknown, apiKey = K.partner) =>
  s.request(method, path, { apiKey, ip: '10.0.22.2', body });
const pwCount = async () => (await s.db.query(`SELECT count(*)::int AS n FROM provider_workspaces`))[0].n as number;

beforeAll(async () => {
  fp = await startFakeProviders();
  s = await startStack({ clock, env: { GOOGLE_ADMIN_URL: fp.url, MICROSOFT_GRAPH_URL: fp.url } });
  fp.google.set('admin@acme-corp.test', {
    mailboxes: [
      { email: 'admin@acme-corp.test', displayName: 'Admin' },
      { email: 'ann@acme-corp.test', displayName: 'Ann Lee' },
      { email: 'bob@acme-corp.test', displayName: 'Bob Stone' },
      { email: 'cat@acme-sales.test', displayName: 'Cat Sales' },
      { email: 'dan@acme-sales.test', displayName: 'Dan Sales' },
      { email: 'old@acme-corp.test', displayName: 'Old', disabled: true },
      // already connected (account 5000)
      { email: 'A@acme.test', displayName: 'Already' },
    ],
  });
  fp.google.set('admin@nodelegation.test', { mailboxes: [{ email: 'x@nodelegation.test' }], authorized: false });
  fp.google.set('admin@down.test', { mailboxes: [], outage: 503 });
  fp.microsoft.set(MS_TENANT, {
    mailboxes: [
      { email: 'm1@contoso.test', displayName: 'Mia' },
      { email: 'm2@contoso.test', displayName: 'Max' },
      { email: 'm3@fabrikam.test', displayName: 'Moe' },
    ],
  });
  fp.microsoft.set('noconsent.onmicrosoft.com', { mailboxes: [{ email: 'n@noconsent.test' }], authorized: false });
  // For /v1
  fp.google.set('it@globex.test', {
    mailboxes: [
      { email: 'x1@globex.test', displayName: 'Xena' },
      { email: 'x2@globex.test', displayName: 'Xavier' },
      { email: 'y1@globex-eu.test', displayName: 'Yann' },
      { email: 'b@acme.test', displayName: 'Bob (connected)' },
    ],
  });
  fp.microsoft.set('globex.onmicrosoft.com', { mailboxes: [{ email: 'g1@globex-ms.test', displayName: 'Gil' }] });
});
afterAll(async () => {
  await s?.close();
  await fp?.close();
});
beforeEach(() => clock.advance(60_000));

describe('/v2 provider workspaces: registration', () => {
  it('registers a Google-family tenant after the delegation check', async () => {
    const before = fp.requests.length;
    const r = await v2('POST', W, { provider: 'google', adminEmail: 'Admin@Acme-Corp.test' });
    expect(r.status).toBe(201);
    expect(r.body.data).toEqual({
      id: expect.any(Number),
      provider: 'google',
      adminEmail: 'admin@acme-corp.test',
      tenantId: null,
      status: 'created',
      workspaceId: 100,
      lastSyncedAt: null,
      domains: [
        { domain: 'acme-corp.test', mailboxCount: 3 },
        { domain: 'acme-sales.test', mailboxCount: 2 },
        { domain: 'acme.test', mailboxCount: 1 },
      ],
      createdAt: expect.any(String),
    });
    // Paged listing (3 per page), acting as the admin.
    const calls = fp.requests.slice(before);
    expect(calls).toHaveLength(3);
    expect(
      calls.every(
        (c) =>
          c.delegatedUser === 'admin@acme-corp.test' &&
          c.url.startsWith('/admin/directory/v1/users?customer=my_customer'),
      ),
    ).toBe(true);
    const again = await v2('POST', W, { provider: 'google', adminEmail: 'admin@acme-corp.test' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
  });

  it('registers a Microsoft-family tenant after the consent check', async () => {
    const r = await v2('POST', W, { provider: 'microsoft', tenantId: MS_TENANT.toUpperCase() });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({
      provider: 'microsoft',
      tenantId: MS_TENANT,
      adminEmail: null,
      status: 'created',
    });
    expect(fp.requests.some((c) => c.url.startsWith(`/v1.0/tenants/${MS_TENANT}/users?%24top=`))).toBe(true);
  });

  it('answers 422 and creates nothing without delegation or consent, or for an unknown or malformed admin or tenant', async () => {
    const n = await pwCount();
    const cases: [unknown, string][] = [
      [{ provider: 'google', adminEmail: 'admin@nodelegation.test' }, 'delegation_missing'],
      [{ provider: 'google', adminEmail: 'nobody@unknown.test' }, 'invalid_admin_email'],
      [{ provider: 'google', adminEmail: 'not-an-address' }, 'invalid_admin_email'],
      [{ provider: 'microsoft', tenantId: 'noconsent.onmicrosoft.com' }, 'consent_missing'],
      [{ provider: 'microsoft', tenantId: 'no such tenant!' }, 'invalid_tenant_id'],
      [{ provider: 'microsoft', tenantId: '00000000-0000-4000-8000-000000000000' }, 'invalid_tenant_id'],
    ];
    for (const [body, reason] of cases) {
      clock.advance(10_000);
      const r = await v2('POST', W, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.code).toBe('unprocessable_entity');
      expect(r.body.error.details.reason).toBe(reason);
    }
    expect(await pwCount()).toBe(n);
  });

  it('answers 502 and creates nothing when the provider is down', async () => {
    const n = await pwCount();
    const r = await v2('POST', W, { provider: 'google', adminEmail: 'admin@down.test' });
    expect(r.status).toBe(502);
    expect(r.body.error.code).toBe('bad_gateway');
    expect(await pwCount()).toBe(n);
  });

  it('validates the body strictly', async () => {
    const cases: [unknown, string][] = [
      [{ provider: 'google' }, 'adminEmail'],
      [{ provider: 'microsoft' }, 'tenantId'],
      [{ provider: 'google', adminEmail: 'a@b.test', tenantId: MS_TENANT }, 'tenantId'],
      [{ provider: 'yahoo', adminEmail: 'a@b.test' }, 'provider'],
      [{ provider: 'google', adminEmail: 'a@b.test', extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const r = await v2('POST', W, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.details.field).toBe(field);
    }
  });

  it('needs accounts:write at EDITOR', async () => {
    const r = await v2('POST', W, { provider: 'google', adminEmail: 'admin@acme-corp.test' }, K.wsViewer);
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150003');
  });

  it("lists the workspace's registrations only", async () => {
    const r = await v2('GET', W, undefined, K.wsViewer);
    expect(r.status).toBe(200);
    expect(r.body.data.map((p: any) => p.provider)).toEqual(['google', 'microsoft']);
    const other = await s.request('GET', '/v2/workspaces/101/provider-workspaces', { key: K.wsOther, ip: '10.0.22.3' });
    expect(other.body.data).toEqual([]);
  });
});

describe('/v2 provider workspaces: preview and sync', () => {
  let google: number;
  beforeAll(async () => {
    const [r] = await s.db.query(`SELECT id FROM provider_workspaces WHERE admin_email = 'admin@acme-corp.test'`);
    google = r.id;
  });

  it('previews the mailboxes not yet connected, with filters and paging', async () => {
    const r = await v2('GET', `${W}/${google}/preview`, undefined, K.wsViewer);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      newEmails: [
        { email: 'admin@acme-corp.test', displayName: 'Admin', domain: 'acme-corp.test' },
        { email: 'ann@acme-corp.test', displayName: 'Ann Lee', domain: 'acme-corp.test' },
        { email: 'bob@acme-corp.test', displayName: 'Bob Stone', domain: 'acme-corp.test' },
        { email: 'cat@acme-sales.test', displayName: 'Cat Sales', domain: 'acme-sales.test' },
        { email: 'dan@acme-sales.test', displayName: 'Dan Sales', domain: 'acme-sales.test' },
      ],
      total: 5,
      page: 1,
      limit: 50,
      connectedCount: 1,
      domains: [
        { domain: 'acme-corp.test', count: 3 },
        { domain: 'acme-sales.test', count: 2 },
      ],
    });
    expect(r.body.pagination).toEqual({ page: 1, per_page: 50, total: 5, total_pages: 1, has_more: false });
    const search = await v2('GET', `${W}/${google}/preview?search=sales`);
    expect(search.body.data.newEmails.map((m: any) => m.email)).toEqual(['cat@acme-sales.test', 'dan@acme-sales.test']);
    const byName = await v2('GET', `${W}/${google}/preview?search=ann%20lee`);
    expect(byName.body.data.newEmails.map((m: any) => m.email)).toEqual(['ann@acme-corp.test']);
    const dom = await v2('GET', `${W}/${google}/preview?domain=acme-sales.test,nowhere.test&limit=1&page=2`);
    expect(dom.body.data).toMatchObject({ total: 2, page: 2, limit: 1, newEmails: [{ email: 'dan@acme-sales.test' }] });
    expect(dom.body.pagination).toEqual({ page: 2, per_page: 1, total: 2, total_pages: 2, has_more: false });
    expect((await v2('GET', `${W}/${google}/preview?limit=0`)).status).toBe(400);
    expect((await v2('GET', `${W}/${google}/preview?sort=x`)).status).toBe(400);
  });

  it('is 404 from another workspace, or for an id that names nothing', async () => {
    expect((await v2('GET', `${W}/99999999999/preview`)).status).toBe(404);
    expect((await v2('GET', `${W}/999999/sync`)).status).toBe(404);
    const r = await s.request('GET', `/v2/workspaces/101/provider-workspaces/${google}/preview`, {
      key: K.wsOther,
      ip: '10.0.22.3',
    });
    expect(r.status).toBe(404);
    const sy = await s.request('POST', `/v2/workspaces/101/provider-workspaces/${google}/sync`, {
      key: K.wsOther,
      ip: '10.0.22.3',
    });
    expect(sy.status).toBe(404);
  });

  it("reports no sync before the first, then imports the tenant's new mailboxes", async () => {
    const none = await v2('GET', `${W}/${google}/sync`);
    expect(none.status).toBe(200);
    expect(none.body.data).toMatchObject({
      status: 'not_started',
      providerWorkspaceId: google,
      total: 0,
      startedAt: null,
    });

    const r = await v2('POST', `${W}/${google}/sync`);
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({
      providerWorkspaceId: google,
      workspaceId: 100,
      status: 'completed',
      total: 6,
      imported: 5,
      skipped: 1,
      error: null,
    });
    const accounts = await s.db.query(
      `SELECT email_address, from_name, provider, status, verification, workspace_id, warmup_max_limit FROM accounts WHERE provider_workspace_id = $1 ORDER BY email_address`,
      [google],
    );
    expect(accounts.map((a) => a.email_address)).toEqual([
      'admin@acme-corp.test',
      'ann@acme-corp.test',
      'bob@acme-corp.test',
      'cat@acme-sales.test',
      'dan@acme-sales.test',
    ]);
    expect(accounts[1]).toEqual({
      email_address: 'ann@acme-corp.test',
      from_name: 'Ann Lee',
      provider: 'google',
      status: 'active',
      verification: 'pending',
      workspace_id: 100,
      warmup_max_limit: 40,
    });

    const status = await v2('GET', `${W}/${google}/sync`, undefined, K.wsViewer);
    expect(status.body.data).toEqual(r.body.data);
    const list = await v2('GET', W);
    expect(list.body.data.find((p: any) => p.id === google)).toMatchObject({
      status: 'active',
      lastSyncedAt: r.body.data.finishedAt,
    });
    const preview = await v2('GET', `${W}/${google}/preview`);
    expect(preview.body.data).toMatchObject({ newEmails: [], total: 0, connectedCount: 6 });
    const note = await s.db.query(
      `SELECT title FROM notifications WHERE workspace_id = 100 AND type = 'provider_sync'`,
    );
    expect(note).toHaveLength(1);

    // A second sync finds nothing new.
    const again = await v2('POST', `${W}/${google}/sync`, {});
    expect(again.body.data).toMatchObject({ status: 'completed', total: 6, imported: 0, skipped: 6 });
    expect(again.body.data.id).toBeGreaterThan(r.body.data.id);
    expect((await v2('POST', `${W}/${google}/sync`, { force: true })).status).toBe(400);
  });

  it('runs one sync at a time per tenant; a running one older than 10 minutes is taken as dead', async () => {
    const insertRunning = (minutesAgo: number) =>
      s.db.query(
        `INSERT INTO provider_workspace_syncs (provider_workspace_id, workspace_id, status, started_at) VALUES ($1, 100, 'running', $2::timestamptz) RETURNING id`,
        [google, new Date(clock.now() - minutesAgo * 60_000).toISOString()],
      );
    const [live] = await insertRunning(1);
    const busy = await v2('POST', `${W}/${google}/sync`);
    expect(busy.status).toBe(409);
    expect(busy.body.error.details.syncId).toBe(live.id);
    await s.db.query(`DELETE FROM provider_workspace_syncs WHERE id = $1`, [live.id]);
    const [dead] = await insertRunning(11);
    const ok = await v2('POST', `${W}/${google}/sync`);
    expect(ok.status).toBe(201);
    const [d] = await s.db.query(`SELECT status, error FROM provider_workspace_syncs WHERE id = $1`, [dead.id]);
    expect(d).toEqual({ status: 'failed', error: 'interrupted' });
  });

  it('records a failed sync when the credentials fail, keeping the registration', async () => {
    const [ms] = await s.db.query(`SELECT id FROM provider_workspaces WHERE tenant_id = $1`, [MS_TENANT]);
    fp.microsoft.get(MS_TENANT)!.credentialsFail = true;
    try {
      const r = await v2('POST', `${W}/${ms.id}/sync`);
      expect(r.status).toBe(422);
      expect(r.body.error.details).toMatchObject({ reason: 'credentials_failed', syncId: expect.any(Number) });
      const st = await v2('GET', `${W}/${ms.id}/sync`);
      expect(st.body.data).toMatchObject({ status: 'failed', error: 'credentials_failed' });
      expect((await v2('GET', W)).body.data.find((p: any) => p.id === ms.id).status).toBe('error');
    } finally {
      fp.microsoft.get(MS_TENANT)!.credentialsFail = false;
    }
    const ok = await v2('POST', `${W}/${ms.id}/sync`);
    expect(ok.body.data).toMatchObject({ status: 'completed', imported: 3 });
    expect((await v2('GET', W)).body.data.find((p: any) => p.id === ms.id).status).toBe('active');
  });

  it('deletes a registration whose credentials fail at preview, so it can be registered again', async () => {
    const [ms] = await s.db.query(`SELECT id FROM provider_workspaces WHERE tenant_id = $1`, [MS_TENANT]);
    fp.microsoft.get(MS_TENANT)!.credentialsFail = true;
    const r = await v2('GET', `${W}/${ms.id}/preview`);
    expect(r.status).toBe(422);
    expect(r.body.error.details).toMatchObject({ reason: 'credentials_failed', registrationDeleted: true });
    expect((await v2('GET', `${W}/${ms.id}/preview`)).status).toBe(404);
    // Imported accounts stay; they no longer point at the deleted registration.
    const orphans = await s.db.query(
      `SELECT count(*)::int AS n FROM accounts WHERE email_address LIKE 'm_@%' AND provider_workspace_id IS NULL`,
    );
    expect(orphans[0].n).toBe(3);
    fp.microsoft.get(MS_TENANT)!.credentialsFail = false;
    const again = await v2('POST', W, { provider: 'microsoft', tenantId: MS_TENANT });
    expect(again.status).toBe(201);
  });
});

describe('/v1 workspaces', () => {
  it('registers a tenant for the organization: 201 with a string workspaceId', async () => {
    const r = await v1('POST', '/v1/workspaces', { provider: 'google', adminEmail: 'it@globex.test' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      workspaceId: expect.stringMatching(/^[1-9][0-9]*$/),
      provider: 'google',
      adminEmail: 'it@globex.test',
      tenantId: null,
      status: 'created',
    });
    // Organization-level registrations import into the organization's first live workspace.
    expect(r.body.importsIntoWorkspaceId).toBe(100);
    const ms = await v1('POST', '/v1/workspaces', { provider: 'microsoft', tenantId: 'globex.onmicrosoft.com' });
    expect(ms.status).toBe(201);
    expect(ms.body).toMatchObject({
      provider: 'microsoft',
      adminEmail: null,
      tenantId: 'globex.onmicrosoft.com',
      status: 'created',
    });
  });

  it('answers 422 with nothing created for missing delegation or consent, or an invalid admin or tenant', async () => {
    const n = await pwCount();
    for (const body of [
      { provider: 'google', adminEmail: 'admin@nodelegation.test' },
      { provider: 'microsoft', tenantId: 'noconsent.onmicrosoft.com' },
      { provider: 'google', adminEmail: 'no-at-sign' },
      { provider: 'microsoft', tenantId: 'not a tenant' },
      { provider: 'google', adminEmail: 'ghost@nowhere.test' },
    ]) {
      const r = await v1('POST', '/v1/workspaces', body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body).toEqual({
        error_code: 'unprocessable_entity',
        message: expect.any(String),
        details: expect.any(Object),
      });
    }
    expect(await pwCount()).toBe(n);
    const missing = await v1('POST', '/v1/workspaces', { provider: 'google' });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error_code: 'invalid_request', details: { field: 'adminEmail' } });
  });

  it('previews, filters by search and domain list, and syncs into the chosen workspace', async () => {
    const [row] = await s.db.query(`SELECT id FROM provider_workspaces WHERE admin_email = 'it@globex.test'`);
    const id = String(row.id);
    const p = await v1('GET', `/v1/workspaces/${id}/preview`);
    expect(p.status).toBe(200);
    expect(p.body).toEqual({
      newEmails: [
        { email: 'x1@globex.test', displayName: 'Xena', domain: 'globex.test' },
        { email: 'x2@globex.test', displayName: 'Xavier', domain: 'globex.test' },
        { email: 'y1@globex-eu.test', displayName: 'Yann', domain: 'globex-eu.test' },
      ],
      total: 3,
      page: 1,
      limit: 50,
      connectedCount: 1,
      domains: [
        { domain: 'globex-eu.test', count: 1 },
        { domain: 'globex.test', count: 2 },
      ],
    });
    const f = await v1('GET', `/v1/workspaces/${id}/preview?domain=globex-eu.test,other.test`);
    expect(f.body.newEmails.map((m: any) => m.email)).toEqual(['y1@globex-eu.test']);
    const q = await v1('GET', `/v1/workspaces/${id}/preview?search=XAV`);
    expect(q.body.newEmails.map((m: any) => m.email)).toEqual(['x2@globex.test']);

    expect((await v1('GET', `/v1/workspaces/${id}/sync`)).body).toMatchObject({
      workspaceId: id,
      status: 'not_started',
    });
    const sy = await v1('POST', `/v1/workspaces/${id}/sync`);
    expect(sy.status).toBe(201);
    expect(sy.body).toMatchObject({
      workspaceId: id,
      importsIntoWorkspaceId: 100,
      status: 'completed',
      total: 4,
      imported: 3,
      skipped: 1,
    });
    const st = await v1('GET', `/v1/workspaces/${id}/sync`);
    expect(st.body).toEqual(sy.body);
    const made = await s.db.query(`SELECT workspace_id FROM accounts WHERE email_address LIKE '%globex%'`);
    expect(made.map((a) => a.workspace_id)).toEqual([100, 100, 100]);
  });

  it('sees every provider workspace of its organization and none of another', async () => {
    const [v2Registered] = await s.db.query(
      `SELECT id FROM provider_workspaces WHERE admin_email = 'admin@acme-corp.test'`,
    );
    const p = await v1('GET', `/v1/workspaces/${v2Registered.id}/preview`);
    expect(p.status).toBe(200);
    const foreign = await v1('GET', `/v1/workspaces/${v2Registered.id}/preview`, undefined, K.org2Partner);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error_code).toBe('not_found');
    expect((await v1('POST', `/v1/workspaces/${v2Registered.id}/sync`, undefined, K.org2Partner)).status).toBe(404);
    expect((await v1('GET', '/v1/workspaces/abc/preview')).status).toBe(404);
    expect((await v1('GET', '/v1/workspaces/99999999999/sync')).status).toBe(404);
    // And the /v2 list of workspace 100 shows the /v1 registrations that import into it.
    const list = await v2('GET', W);
    expect(list.body.data.some((x: any) => x.adminEmail === 'it@globex.test')).toBe(true);
  });

  it('deletes a registration whose credentials fail at preview, so it can be retried', async () => {
    const [row] = await s.db.query(`SELECT id FROM provider_workspaces WHERE tenant_id = 'globex.onmicrosoft.com'`);
    const t = fp.microsoft.get('globex.onmicrosoft.com')!;
    t.credentialsFail = true;
    const r = await v1('GET', `/v1/workspaces/${row.id}/preview`);
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ error_code: 'unprocessable_entity', details: { registrationDeleted: true } });
    expect((await v1('GET', `/v1/workspaces/${row.id}/preview`)).status).toBe(404);
    // Retried while still failing: refused, nothing created; once fixed: registered again.
    expect(
      (await v1('POST', '/v1/workspaces', { provider: 'microsoft', tenantId: 'globex.onmicrosoft.com' })).status,
    ).toBe(422);
    t.credentialsFail = false;
    const again = await v1('POST', '/v1/workspaces', { provider: 'microsoft', tenantId: 'globex.onmicrosoft.com' });
    expect(again.status).toBe(201);
    expect(again.body.workspaceId).not.toBe(String(row.id));
  });

  it('imports into the next live workspace when the chosen one was deleted since', async () => {
    const [row] = await s.db.query(
      `SELECT id, workspace_id FROM provider_workspaces WHERE tenant_id = 'globex.onmicrosoft.com'`,
    );
    expect(row.workspace_id).toBe(100);
    await s.db.query(`UPDATE workspaces SET deleted_at = now() WHERE id = 100`);
    try {
      const sy = await v1('POST', `/v1/workspaces/${row.id}/sync`);
      expect(sy.status).toBe(201);
      expect(sy.body).toMatchObject({ importsIntoWorkspaceId: 101, imported: 1 });
      const [a] = await s.db.query(`SELECT workspace_id FROM accounts WHERE email_address = 'g1@globex-ms.test'`);
      expect(a.workspace_id).toBe(101);
    } finally {
      await s.db.query(`UPDATE workspaces SET deleted_at = NULL WHERE id = 100`);
    }
  });
});

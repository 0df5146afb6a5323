// The session-authenticated /api-keys routes (docs/decisions.md section 7; spec codes 150101 to 150104).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack();
});
afterAll(async () => s?.close());

describe('/api-keys', () => {
  it('no session is 150001, an unknown session 150002 (Envelope A)', async () => {
    const none = await s.session('GET', '/api-keys', null);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ success: false, data: null, errorCode: '150001', errorMessage: expect.any(String) });
    const unknown = await s.session('GET', '/api-keys', 'nope-nope-nope-nope-nope');
    expect(unknown.status).toBe(401);
    expect(unknown.body.errorCode).toBe('150002');
  });

  it('creates a workspace key whose secret is shown once, stored only hashed, and works at once', async () => {
    const r = await s.session('POST', '/api-keys', K.session, {
      name: 'new',
      type: 'workspace',
      workspaceId: 100,
      role: 'EDITOR',
      scopes: ['tags:read'],
    });
    expect(r.status).toBe(201);
    expect(r.body.success).toBe(true);
    const secret: string = r.body.data.secret;
    expect(secret).toMatch(/^svc_ws_[A-Za-z0-9]{40}$/);
    const stored = await s.db.query(`SELECT * FROM api_keys WHERE id = $1`, [r.body.data.id]);
    expect(JSON.stringify(stored)).not.toContain(secret.slice(7));
    const list = await s.session('GET', '/api-keys', K.session);
    expect(JSON.stringify(list.body)).not.toContain(secret.slice(7));
    expect(list.body.data.find((k: { id: number }) => k.id === r.body.data.id)).toMatchObject({
      name: 'new',
      role: 'EDITOR',
      type: 'workspace',
    });
    const use = await s.request('GET', '/v2/workspaces/100/rate-limit', { key: secret, ip: '10.4.0.1' });
    expect(use.status).toBe(200);
  });

  it('150101: a workspace key needs a workspace id', async () => {
    const r = await s.session('POST', '/api-keys', K.session, { name: 'x', type: 'workspace', scopes: [] });
    expect(r.status).toBe(400);
    expect(r.body.errorCode).toBe('150101');
  });

  it("150102: no role above the creator's; the default ADMIN is capped", async () => {
    const r = await s.session('POST', '/api-keys', K.sessionEditor, {
      name: 'x',
      type: 'workspace',
      workspaceId: 100,
      role: 'ADMIN',
    });
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150102');
    const d = await s.session('POST', '/api-keys', K.sessionEditor, { name: 'x', type: 'workspace', workspaceId: 100 });
    expect(d.status).toBe(201);
    expect(d.body.data.role).toBe('EDITOR');
    const p = await s.session('POST', '/api-keys', K.sessionEditor, { name: 'x', type: 'partner' });
    expect(p.body.errorCode).toBe('150102');
  });

  it('150103: no access to the workspace', async () => {
    const r = await s.session('POST', '/api-keys', K.sessionEditor, { name: 'x', type: 'workspace', workspaceId: 101 });
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150103');
    const other = await s.session('POST', '/api-keys', K.session, { name: 'x', type: 'workspace', workspaceId: 200 });
    expect(other.body.errorCode).toBe('150103');
  });

  it('150104: no key with that id in the organization; revocation is immediate', async () => {
    expect((await s.session('DELETE', '/api-keys/99999999999', K.session)).body.errorCode).toBe('150104');
    const foreign = await s.session('DELETE', '/api-keys/2000', K.session);
    expect(foreign.status).toBe(404);
    expect(foreign.body.errorCode).toBe('150104');
    const mk = await s.session('POST', '/api-keys', K.session, {
      name: 'tmp',
      type: 'personal',
      scopes: ['workspace:read'],
    });
    const secret = mk.body.data.secret;
    expect((await s.request('GET', '/v2/workspaces/100', { key: secret, ip: '10.4.0.2' })).status).not.toBe(401);
    expect((await s.session('DELETE', `/api-keys/${mk.body.data.id}`, K.session)).status).toBe(200);
    const after = await s.request('GET', '/v2/workspaces/100', { key: secret, ip: '10.4.0.2' });
    expect(after.status).toBe(401);
    expect(after.body.errorCode).toBe('150002');
    // A member cannot revoke someone else's key: it looks absent.
    expect((await s.session('DELETE', '/api-keys/1000', K.sessionViewer)).body.errorCode).toBe('150104');
  });

  it('refuses unknown fields and unknown scopes', async () => {
    const r = await s.session('POST', '/api-keys', K.session, { name: 'x', type: 'personal', secret: 'mine' });
    expect(r.status).toBe(400);
    const sc = await s.session('POST', '/api-keys', K.session, { name: 'x', type: 'personal', scopes: ['root:all'] });
    expect(sc.status).toBe(400);
    expect(sc.body.success).toBe(false);
  });
});

describe('/internal', () => {
  it('needs the internal token', async () => {
    const r = await fetch(s.backendUrl + '/internal/organizations/1', { method: 'PATCH', body: '{}' });
    expect(r.status).toBe(401);
  });
  it('validates organization changes strictly and answers 404 for unknown ids', async () => {
    expect((await s.internal('PATCH', '/internal/organizations/1', { plan: 'platinum' })).status).toBe(400);
    expect((await s.internal('PATCH', '/internal/organizations/1', { colour: 'red' })).body.error.details.field).toBe(
      'colour',
    );
    expect((await s.internal('PATCH', '/internal/organizations/99', { paused: true })).status).toBe(404);
    expect((await s.internal('DELETE', '/internal/workspaces/9999')).status).toBe(404);
  });
  it('a plan change lowers every mailbox above the new cap at once', async () => {
    const r = await s.internal('PATCH', '/internal/organizations/1', { plan: 'free' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ plan: 'free', mailboxesLowered: expect.any(Number) });
    const rows = await s.db.query(
      `SELECT max(warmup_max_limit) AS m, max(warmup_current_limit) AS c FROM accounts a JOIN workspaces w ON w.id = a.workspace_id WHERE w.organization_id = 1`,
    );
    expect(rows[0].m).toBeLessThanOrEqual(10);
    expect(rows[0].c).toBeLessThanOrEqual(10);
    const beta = await s.db.query(`SELECT warmup_max_limit FROM accounts WHERE id = 6000`);
    expect(beta[0].warmup_max_limit).toBe(10); // another organization is untouched
    await s.internal('PATCH', '/internal/organizations/1', { plan: 'growth' });
  });
});

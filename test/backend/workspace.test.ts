// The workspace domain through the gateway: read, rename, roster, invite, re-role, remove, and the
// immediate effect of membership changes on the next request.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { ALL_SCOPES, K } from '../fixtures/seed.js';

const clock = new FakeClock();
let s: Stack;
let n = 0;
/** A fresh IP per request keeps the IP layer out of the way. */
const ip = () => `10.30.${Math.floor(++n / 250)}.${n % 250}`;
const MEMBER2_PK = 'svc_pk_' + 'WsMember2000000000000000000000000001';

beforeAll(async () => {
  s = await startStack({
    clock,
    extra: {
      users: [
        { id: 13, organizationId: 1, email: 'newbie@acme.test', orgRole: 'MEMBER' },
        { id: 14, organizationId: 1, email: 'member2@acme.test', orgRole: 'MEMBER' },
      ],
      memberships: [{ workspaceId: 100, userId: 14, role: 'EDITOR' }],
      apiKeys: [{ id: 1014, secret: MEMBER2_PK, name: 'member2 pk', userId: 14, scopes: ALL_SCOPES }],
    },
  });
});
afterAll(async () => s?.close());
// Each test starts in a fresh rate-limit window.
beforeEach(() => clock.advance(60_000));

const req = (method: string, path: string, key: string, body?: unknown) =>
  s.request(method, path, { key, body, ip: ip() });

describe('GET /v2/workspaces/{id}', () => {
  it('reads the workspace with the role the key acts at', async () => {
    const r = await req('GET', '/v2/workspaces/100', K.wsAdmin);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      id: 100,
      organizationId: 1,
      name: 'Main',
      dailyWarmupBudget: 200,
      role: 'ADMIN',
      accountCount: 3,
    });
    expect(r.body.meta.request_id).toBe(r.headers.get('x-request-id'));
    const o = await req('GET', '/v2/workspaces/100', K.ownerPk);
    expect(o.body.data.role).toBe('OWNER');
    const v = await req('GET', '/v2/workspaces/100', K.wsViewer);
    expect(v.body.data.role).toBe('VIEWER');
  });

  it('never crosses workspaces: another workspace key is refused by the gateway', async () => {
    const r = await req('GET', '/v2/workspaces/100', K.wsOther);
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150004');
  });
});

describe('PATCH /v2/workspaces/{id}', () => {
  it('renames (trimmed)', async () => {
    const r = await req('PATCH', '/v2/workspaces/101', K.wsOther, { name: '  Outbound  ' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id: 101, name: 'Outbound', dailyWarmupBudget: 100 });
    const g = await req('GET', '/v2/workspaces/101', K.wsOther);
    expect(g.body.data.name).toBe('Outbound');
  });

  it('never edits the budget: dailyWarmupBudget is an unknown field (400 invalid_request), nothing changes', async () => {
    const r = await req('PATCH', '/v2/workspaces/101', K.wsOther, { name: 'X', dailyWarmupBudget: 5 });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
    expect(r.body.error.details.field).toBe('dailyWarmupBudget');
    const [w] = await s.db.query(`SELECT name, daily_warmup_budget FROM workspaces WHERE id = 101`);
    expect(w).toEqual({ name: 'Outbound', daily_warmup_budget: 100 });
  });

  it('validates the name', async () => {
    for (const body of [{ name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }, {}, { name: 5 }]) {
      const r = await req('PATCH', '/v2/workspaces/101', K.wsOther, body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
      expect(r.body.error.details.field).toBe('name');
    }
  });

  it('needs workspace:manage at ADMIN (gateway)', async () => {
    const r = await req('PATCH', '/v2/workspaces/100', K.wsViewer, { name: 'nope' });
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150003');
  });
});

describe('members', () => {
  it('lists the roster', async () => {
    const r = await req('GET', '/v2/workspaces/100/members', K.wsViewer);
    expect(r.status).toBe(200);
    const byId = Object.fromEntries(r.body.data.map((m: any) => [m.userId, m]));
    expect(byId[10]).toMatchObject({
      userId: 10,
      email: 'owner@acme.test',
      role: 'OWNER',
      orgRole: 'OWNER',
      joinedAt: expect.any(String),
    });
    expect(byId[11]).toMatchObject({ email: 'editor@acme.test', role: 'EDITOR', orgRole: 'MEMBER' });
    expect(byId[12]).toMatchObject({ role: 'VIEWER' });
    expect(r.body.data.every((m: any) => m.userId !== 20)).toBe(true);
  });

  it('invites a user of the organization; a second invite is 409 conflict', async () => {
    const r = await req('POST', '/v2/workspaces/100/members', K.wsAdmin, { email: 'NewBie@acme.test', role: 'EDITOR' });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({
      userId: 13,
      email: 'newbie@acme.test',
      role: 'EDITOR',
      orgRole: 'MEMBER',
      userCreated: false,
    });
    const again = await req('POST', '/v2/workspaces/100/members', K.wsAdmin, {
      email: 'newbie@acme.test',
      role: 'VIEWER',
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
    const [m] = await s.db.query(`SELECT role FROM memberships WHERE workspace_id = 100 AND user_id = 13`);
    expect(m.role).toBe('EDITOR');
  });

  it('invites an unknown address by creating a MEMBER user of the organization', async () => {
    const r = await req('POST', '/v2/workspaces/100/members', K.wsAdmin, {
      email: 'fresh@elsewhere.test',
      role: 'VIEWER',
    });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({
      email: 'fresh@elsewhere.test',
      role: 'VIEWER',
      orgRole: 'MEMBER',
      userCreated: true,
    });
    const [u] = await s.db.query(`SELECT organization_id, org_role FROM users WHERE id = $1`, [r.body.data.userId]);
    expect(u).toEqual({ organization_id: 1, org_role: 'MEMBER' });
  });

  it("refuses an address of another organization's user (409 conflict) and creates nothing", async () => {
    const r = await req('POST', '/v2/workspaces/100/members', K.wsAdmin, { email: 'owner@beta.test', role: 'VIEWER' });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('conflict');
    const rows = await s.db.query(`SELECT 1 FROM memberships WHERE workspace_id = 100 AND user_id = 20`);
    expect(rows).toHaveLength(0);
  });

  it("cannot invite with a role above the caller's acting role (403 forbidden)", async () => {
    const r = await req('POST', '/v2/workspaces/100/members', K.wsAdmin, { email: 'boss@acme.test', role: 'OWNER' });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
    expect(await s.db.query(`SELECT 1 FROM users WHERE email = 'boss@acme.test'`)).toHaveLength(0);
    // An OWNER may grant OWNER.
    const o = await req('POST', '/v2/workspaces/100/members', K.ownerPk, { email: 'boss@acme.test', role: 'OWNER' });
    expect(o.status).toBe(201);
    expect(o.body.data.role).toBe('OWNER');
  });

  it('validates the invitation body', async () => {
    for (const [body, field] of [
      [{ email: 'not-an-address', role: 'VIEWER' }, 'email'],
      [{ email: 'a@b.test', role: 'GOD' }, 'role'],
      [{ email: 'a@b.test' }, 'role'],
      [{ email: 'a@b.test', role: 'VIEWER', extra: 1 }, 'extra'],
    ] as const) {
      const r = await req('POST', '/v2/workspaces/100/members', K.wsAdmin, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field } });
    }
  });

  it("re-roles within the caller's reach only", async () => {
    // ADMIN cannot promote to OWNER, nor touch an OWNER.
    const up = await req('PATCH', '/v2/workspaces/100/members/13', K.wsAdmin, { role: 'OWNER' });
    expect(up.status).toBe(403);
    expect(up.body.error.code).toBe('forbidden');
    const owner = await req('PATCH', '/v2/workspaces/100/members/10', K.wsAdmin, { role: 'VIEWER' });
    expect(owner.status).toBe(403);
    expect(owner.body.error.code).toBe('forbidden');
    const ok = await req('PATCH', '/v2/workspaces/100/members/13', K.wsAdmin, { role: 'ADMIN' });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ userId: 13, role: 'ADMIN' });
    const missing = await req('PATCH', '/v2/workspaces/100/members/20', K.wsAdmin, { role: 'VIEWER' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    const bad = await req('PATCH', '/v2/workspaces/100/members/13', K.wsAdmin, { role: 'ADMIN', email: 'x@y.test' });
    expect(bad.status).toBe(400);
  });

  it('keeps at least one OWNER (409 conflict)', async () => {
    // Workspace 101's only owner is user 10.
    const demote = await req('PATCH', '/v2/workspaces/101/members/10', K.ownerPk, { role: 'ADMIN' });
    expect(demote.status).toBe(409);
    expect(demote.body.error.code).toBe('conflict');
    const remove = await req('DELETE', '/v2/workspaces/101/members/10', K.ownerPk);
    expect(remove.status).toBe(409);
    const [m] = await s.db.query(`SELECT role FROM memberships WHERE workspace_id = 101 AND user_id = 10`);
    expect(m.role).toBe('OWNER');
  });

  it('re-role and removal apply to the gateway on the very next request', async () => {
    // Warm the gateway's cache with member2's principal (EDITOR: below workspace:manage's ADMIN).
    const before = await req('PATCH', '/v2/workspaces/100', MEMBER2_PK, { name: 'Main' });
    expect(before.status).toBe(403);
    expect(before.body.errorCode).toBe('150003');
    const read = await req('GET', '/v2/workspaces/100', MEMBER2_PK);
    expect(read.body.data.role).toBe('EDITOR');

    const promote = await req('PATCH', '/v2/workspaces/100/members/14', K.ownerPk, { role: 'ADMIN' });
    expect(promote.status).toBe(200);
    const now = await req('PATCH', '/v2/workspaces/100', MEMBER2_PK, { name: 'Main' });
    expect(now.status).toBe(200);

    const demote = await req('PATCH', '/v2/workspaces/100/members/14', K.ownerPk, { role: 'VIEWER' });
    expect(demote.status).toBe(200);
    const refused = await req('PATCH', '/v2/workspaces/100', MEMBER2_PK, { name: 'Main' });
    expect(refused.status).toBe(403);
    expect(refused.body.errorCode).toBe('150003');
    expect((await req('GET', '/v2/workspaces/100', MEMBER2_PK)).body.data.role).toBe('VIEWER');

    const removed = await req('DELETE', '/v2/workspaces/100/members/14', K.ownerPk);
    expect(removed.status).toBe(200);
    expect(removed.body.data).toMatchObject({ userId: 14, role: 'VIEWER', removed: true });
    const gone = await req('GET', '/v2/workspaces/100', MEMBER2_PK);
    expect(gone.status).toBe(403);
    expect(gone.body.errorCode).toBe('150004');
    const again = await req('DELETE', '/v2/workspaces/100/members/14', K.ownerPk);
    expect(again.status).toBe(404);
  });

  it('an ADMIN cannot remove an OWNER', async () => {
    const r = await req('DELETE', '/v2/workspaces/100/members/10', K.wsAdmin);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
  });
});

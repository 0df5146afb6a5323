// Provisioning and budgets through the gateway: listing, creating, reading and setting budgets against
// the organization's cap, including fifty concurrent writers that must never together exceed it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack, type Res } from '../helpers/stack.js';
import { ALL_SCOPES, K } from '../fixtures/seed.js';
import { testSecret } from '../helpers/keys.js';

const clock = new FakeClock();
let s: Stack;
let n = 0;
const ip = () => `10.31.${Math.floor(++n / 250)}.${n % 250}`;

const secret = (tag: string, i = 0) => testSecret('svc_pk_', `${tag}${i}`);
const OWNER2_PK = secret('SecondOwner');
const PROVISION_ONLY_PK = secret('ProvisionOnly');
const DOOMED_WS = testSecret('svc_ws_', 'Doomed');
/** Ten organization owners each of orgs 4 (PATCH race) and 5 (POST race), one personal key each. */
const RACERS = 10;
const org4Keys = Array.from({ length: RACERS }, (_, i) => secret('Org4Owner', i));
const org5Keys = Array.from({ length: RACERS }, (_, i) => secret('Org5Owner', i));

function raceOrg(orgId: number, keys: string[], cap: number, workspaces: number) {
  return {
    organizations: [{ id: orgId, name: `Race ${orgId}`, plan: 'growth', warmupCap: cap }],
    users: keys.map((_, i) => ({
      id: orgId * 100 + i,
      organizationId: orgId,
      email: `owner${i}@race${orgId}.test`,
      orgRole: 'OWNER',
    })),
    workspaces: Array.from({ length: workspaces }, (_, i) => ({
      id: orgId * 1000 + i,
      organizationId: orgId,
      name: `R${i}`,
      dailyWarmupBudget: 0,
    })),
    apiKeys: keys.map((k, i) => ({
      id: orgId * 1000 + i,
      secret: k,
      name: `racer ${i}`,
      userId: orgId * 100 + i,
      scopes: ALL_SCOPES,
    })),
  };
}

beforeAll(async () => {
  const r4 = raceOrg(4, org4Keys, 1000, 50);
  const r5 = raceOrg(5, org5Keys, 500, 0);
  s = await startStack({
    clock,
    extra: {
      organizations: [...r4.organizations, ...r5.organizations],
      users: [{ id: 15, organizationId: 1, email: 'owner2@acme.test', orgRole: 'OWNER' }, ...r4.users, ...r5.users],
      workspaces: [
        { id: 102, organizationId: 1, name: 'Gone', dailyWarmupBudget: 50, deleted: true },
        { id: 103, organizationId: 1, name: 'Not mine', dailyWarmupBudget: 0 },
        { id: 104, organizationId: 1, name: 'Doomed', dailyWarmupBudget: 0 },
        ...r4.workspaces,
      ],
      memberships: [
        { workspaceId: 100, userId: 15, role: 'OWNER' },
        { workspaceId: 103, userId: 11, role: 'OWNER' },
        { workspaceId: 104, userId: 10, role: 'OWNER' },
      ],
      apiKeys: [
        { id: 1015, secret: OWNER2_PK, name: 'owner2', userId: 15, scopes: ALL_SCOPES },
        { id: 1017, secret: DOOMED_WS, name: 'doomed', workspaceId: 104, scopes: ALL_SCOPES, createdBy: 10 },
        { id: 1016, secret: PROVISION_ONLY_PK, name: 'provision only', userId: 10, scopes: ['workspace:provision'] },
        ...r4.apiKeys,
        ...r5.apiKeys,
      ],
    },
  });
});
afterAll(async () => s?.close());
beforeEach(() => clock.advance(60_000));

const req = (method: string, path: string, key: string, body?: unknown) =>
  s.request(method, path, { key, body, ip: ip() });
const budgets = async (org: number): Promise<Record<number, number>> =>
  Object.fromEntries(
    (
      await s.db.query(`SELECT id, daily_warmup_budget FROM workspaces WHERE organization_id = $1 ORDER BY id`, [org])
    ).map((w) => [w.id, w.daily_warmup_budget]),
  );

describe('GET /v2/workspaces', () => {
  it('a personal key of an organization owner gets every live workspace, each with the role it acts at', async () => {
    const r = await req('GET', '/v2/workspaces', K.ownerPk);
    expect(r.status).toBe(200);
    const ids = r.body.data.map((w: any) => w.id);
    expect(ids).toEqual([100, 101, 103, 104]);
    expect(r.body.data[0]).toMatchObject({
      id: 100,
      organizationId: 1,
      name: 'Main',
      dailyWarmupBudget: 200,
      role: 'OWNER',
      createdAt: expect.any(String),
    });
    // Not a member of 103: listed (the owner sees the organization), but the key acts at no role there.
    expect(r.body.data[2]).toMatchObject({ id: 103, role: null });
  });

  it('a workspace key holding workspace:read gets a single-element array of its own workspace', async () => {
    const r = await req('GET', '/v2/workspaces', K.wsAdmin);
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(1);
    expect(r.body.data[0]).toMatchObject({ id: 100, role: 'ADMIN' });
    const v = await req('GET', '/v2/workspaces', K.wsViewer);
    expect(v.body.data).toEqual([expect.objectContaining({ id: 100, role: 'VIEWER' })]);
  });

  it("a workspace key of a soft-deleted workspace gets nothing, and the workspace leaves the owner's list", async () => {
    await s.db.query(`UPDATE workspaces SET deleted_at = now() WHERE id = 104`);
    const r = await req('GET', '/v2/workspaces', DOOMED_WS);
    expect(r.status).toBe(403);
    // The backend answers forbidden; a gateway that checks the key's workspace first answers 150004.
    expect(r.body.error?.code ?? r.body.errorCode).toMatch(/^(forbidden|150004)$/);
    expect((await req('GET', '/v2/workspaces', K.ownerPk)).body.data.map((w: any) => w.id)).toEqual([100, 101, 103]);
  });

  it('refuses a workspace key without workspace:read and a personal key of a non-owner (gateway 150003)', async () => {
    expect((await req('GET', '/v2/workspaces', K.wsNoScope)).body.errorCode).toBe('150003');
    expect((await req('GET', '/v2/workspaces', K.editorPk)).body.errorCode).toBe('150003');
  });
});

describe('POST /v2/workspaces', () => {
  it('creates a workspace; the creator and every organization owner become OWNER members, usable at once', async () => {
    const r = await req('POST', '/v2/workspaces', K.ownerPk, { name: 'Launch' });
    expect(r.status).toBe(201);
    const w = r.body.data;
    expect(w).toMatchObject({ organizationId: 1, name: 'Launch', dailyWarmupBudget: 0, role: 'OWNER' });
    expect(w.members).toEqual([
      { userId: 10, role: 'OWNER' },
      { userId: 15, role: 'OWNER' },
    ]);
    // accessChanged: both owners' keys act in the new workspace on their very next request.
    const g = await req('GET', `/v2/workspaces/${w.id}`, K.ownerPk);
    expect(g.status).toBe(200);
    expect(g.body.data.role).toBe('OWNER');
    expect((await req('GET', `/v2/workspaces/${w.id}`, OWNER2_PK)).status).toBe(200);
    // Non-owner members of the organization are not added.
    expect((await req('GET', `/v2/workspaces/${w.id}`, K.editorPk)).body.errorCode).toBe('150004');
  });

  it('sets a budget within the cap', async () => {
    const r = await req('POST', '/v2/workspaces', K.ownerPk, { name: 'Budgeted', dailyWarmupBudget: 150 });
    expect(r.status).toBe(201);
    expect(r.body.data.dailyWarmupBudget).toBe(150);
  });

  it('a budget needs workspace:quota too (403 forbidden), and nothing is created', async () => {
    const before = (await s.db.query(`SELECT count(*)::int AS n FROM workspaces`))[0].n;
    const r = await req('POST', '/v2/workspaces', PROVISION_ONLY_PK, { name: 'No quota', dailyWarmupBudget: 10 });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
    expect((await s.db.query(`SELECT count(*)::int AS n FROM workspaces`))[0].n).toBe(before);
    // Without a budget, workspace:provision is enough.
    const ok = await req('POST', '/v2/workspaces', PROVISION_ONLY_PK, { name: 'Plain' });
    expect(ok.status).toBe(201);
  });

  it('a budget over the cap is 400 quota_exceeds_org_limit and creates nothing', async () => {
    // Allocated: 200 + 100 + 150 = 450 of 1000 (the deleted workspace's 50 does not count).
    const before = (await s.db.query(`SELECT count(*)::int AS n FROM workspaces`))[0].n;
    const r = await req('POST', '/v2/workspaces', K.ownerPk, { name: 'Too big', dailyWarmupBudget: 551 });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('quota_exceeds_org_limit');
    expect(r.body.error.details).toMatchObject({ orgLimit: 1000, allocated: 450, requested: 1001 });
    expect((await s.db.query(`SELECT count(*)::int AS n FROM workspaces`))[0].n).toBe(before);
    expect(await s.db.query(`SELECT 1 FROM workspaces WHERE name = 'Too big'`)).toHaveLength(0);
  });

  it('validates the body', async () => {
    for (const [body, field] of [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x', dailyWarmupBudget: -1 }, 'dailyWarmupBudget'],
      [{ name: 'x', dailyWarmupBudget: 1.5 }, 'dailyWarmupBudget'],
      [{ name: 'x', plan: 'scale' }, 'plan'],
    ] as const) {
      const r = await req('POST', '/v2/workspaces', K.ownerPk, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field } });
    }
  });

  it('refuses workspace keys and non-owners (gateway 150003)', async () => {
    expect((await req('POST', '/v2/workspaces', K.wsAdmin, { name: 'x' })).body.errorCode).toBe('150003');
    expect((await req('POST', '/v2/workspaces', K.editorPk, { name: 'x' })).body.errorCode).toBe('150003');
  });
});

describe('budgets', () => {
  it('GET /v2/workspaces/quotas reports orgLimit, allocated and each live workspace', async () => {
    const r = await req('GET', '/v2/workspaces/quotas', K.ownerPk);
    expect(r.status).toBe(200);
    const d = r.body.data;
    expect(d.orgLimit).toBe(1000);
    expect(d.allocated).toBe(450);
    expect(d.available).toBe(550);
    expect(d.workspaces.find((w: any) => w.workspaceId === 100)).toEqual({
      workspaceId: 100,
      name: 'Main',
      dailyWarmupBudget: 200,
    });
    expect(d.workspaces.some((w: any) => w.workspaceId === 102)).toBe(false);
    expect(d.workspaces.every((w: any) => Object.keys(w).sort().join() === 'dailyWarmupBudget,name,workspaceId')).toBe(
      true,
    );
  });

  it('PATCH changes only the listed workspaces', async () => {
    const before = await budgets(1);
    const r = await req('PATCH', '/v2/workspaces/quotas', K.ownerPk, {
      quotas: [
        { workspaceId: 100, dailyWarmupBudget: 300 },
        { workspaceId: 103, dailyWarmupBudget: 20 },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.data.allocated).toBe(570);
    expect(r.body.data.updated).toEqual([
      { workspaceId: 100, name: 'Main', dailyWarmupBudget: 300 },
      { workspaceId: 103, name: 'Not mine', dailyWarmupBudget: 20 },
    ]);
    expect(await budgets(1)).toEqual({ ...before, 100: 300, 103: 20 });
  });

  it('checks the cap once across the whole request: a swap that stays within the cap passes', async () => {
    // 570 allocated; 101 at 600 alone would be 1070 (over), but with 100 at 0 it is 770.
    const r = await req('PATCH', '/v2/workspaces/quotas', K.ownerPk, {
      quotas: [
        { workspaceId: 101, dailyWarmupBudget: 600 },
        { workspaceId: 100, dailyWarmupBudget: 0 },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.data.allocated).toBe(770);
  });

  it('over the cap is 400 quota_exceeds_org_limit and writes nothing', async () => {
    const before = await budgets(1);
    const r = await req('PATCH', '/v2/workspaces/quotas', K.ownerPk, {
      quotas: [
        { workspaceId: 100, dailyWarmupBudget: 100 },
        { workspaceId: 103, dailyWarmupBudget: 251 },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('quota_exceeds_org_limit');
    expect(r.body.error.details).toMatchObject({ orgLimit: 1000, allocated: 770, requested: 1101 });
    expect(await budgets(1)).toEqual(before);
  });

  it('unknown, other-organization and deleted workspace ids are 400 naming them, and nothing is written', async () => {
    const before = await budgets(1);
    const r = await req('PATCH', '/v2/workspaces/quotas', K.ownerPk, {
      quotas: [
        { workspaceId: 100, dailyWarmupBudget: 1 },
        { workspaceId: 999999, dailyWarmupBudget: 1 },
        { workspaceId: 200, dailyWarmupBudget: 1 },
        { workspaceId: 102, dailyWarmupBudget: 1 },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
    expect(r.body.error.details.workspaceIds).toEqual([999999, 200, 102]);
    expect(r.body.error.message).toContain('999999');
    expect(await budgets(1)).toEqual(before);
    expect((await budgets(2))[200]).toBe(0);
  });

  it('validates the body', async () => {
    for (const body of [
      {},
      { quotas: [] },
      { quotas: [{ workspaceId: 100 }] },
      { quotas: [{ workspaceId: 100, dailyWarmupBudget: -5 }] },
      { quotas: [{ workspaceId: 100, dailyWarmupBudget: 5, x: 1 }] },
      {
        quotas: [
          { workspaceId: 100, dailyWarmupBudget: 5 },
          { workspaceId: 100, dailyWarmupBudget: 6 },
        ],
      },
    ]) {
      const r = await req('PATCH', '/v2/workspaces/quotas', K.ownerPk, body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
      expect(r.body.error.details.field).toMatch(/^quotas/);
    }
  });

  it('an organization over a lowered cap may still shrink budgets, never grow them', async () => {
    await s.db.query(`UPDATE organizations SET warmup_cap = 500 WHERE id = 1`);
    const shrink = await req('PATCH', '/v2/workspaces/quotas', K.ownerPk, {
      quotas: [{ workspaceId: 101, dailyWarmupBudget: 500 }],
    });
    expect(shrink.status).toBe(200);
    expect(shrink.body.data).toMatchObject({ orgLimit: 500, allocated: 670, available: 0 });
    const grow = await req('PATCH', '/v2/workspaces/quotas', K.ownerPk, {
      quotas: [{ workspaceId: 100, dailyWarmupBudget: 1 }],
    });
    expect(grow.status).toBe(400);
    expect(grow.body.error.code).toBe('quota_exceeds_org_limit');
    await s.db.query(`UPDATE organizations SET warmup_cap = NULL WHERE id = 1`);
    const unlimited = await req('GET', '/v2/workspaces/quotas', K.ownerPk);
    expect(unlimited.body.data).toMatchObject({ orgLimit: null, available: null });
    const big = await req('PATCH', '/v2/workspaces/quotas', K.ownerPk, {
      quotas: [{ workspaceId: 100, dailyWarmupBudget: 100000 }],
    });
    expect(big.status).toBe(200);
  });

  it('workspace keys cannot touch budgets (gateway 150003)', async () => {
    expect((await req('GET', '/v2/workspaces/quotas', K.wsAdmin)).body.errorCode).toBe('150003');
    expect(
      (await req('PATCH', '/v2/workspaces/quotas', K.wsAdmin, { quotas: [{ workspaceId: 100, dailyWarmupBudget: 1 }] }))
        .body.errorCode,
    ).toBe('150003');
  });
});

describe('fifty concurrent writers against a cap', () => {
  const fire = (method: string, path: string, keys: string[], body: (i: number) => unknown) =>
    Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        s.request(method, path, { key: keys[i % keys.length], body: body(i), ip: `10.32.${i}.1` }),
      ),
    );

  function split(rs: Res[]) {
    // Every request reached the backend: no rate-limit (or any gateway) refusal.
    for (const r of rs) expect(r.body?.errorCode ?? null).toBeNull();
    const ok = rs
      .map((r, i) => [r, i] as const)
      .filter(([r]) => r.status === 200 || r.status === 201)
      .map(([, i]) => i);
    const refused = rs
      .map((r, i) => [r, i] as const)
      .filter(([r]) => r.status === 400)
      .map(([, i]) => i);
    for (const i of refused) expect(rs[i].body.error.code).toBe('quota_exceeds_org_limit');
    expect(ok.length + refused.length).toBe(50);
    return { ok, refused };
  }

  it('PATCH /v2/workspaces/quotas: the sum never exceeds the cap and each refused request wrote nothing', async () => {
    // Org 4: cap 1000, fifty workspaces at 0; request i sets workspace 4000+i to 150: six fit.
    const rs = await fire('PATCH', '/v2/workspaces/quotas', org4Keys, (i) => ({
      quotas: [{ workspaceId: 4000 + i, dailyWarmupBudget: 150 }],
    }));
    const { ok, refused } = split(rs);
    expect(ok).toHaveLength(6);
    expect(refused).toHaveLength(44);
    const b = await budgets(4);
    const sum = Object.values(b).reduce((x, y) => x + y, 0);
    expect(sum).toBe(900);
    for (const i of refused) expect(b[4000 + i]).toBe(0);
    for (const i of ok) expect(b[4000 + i]).toBe(150);
  });

  it('POST /v2/workspaces: the sum never exceeds the cap and each refused request created nothing', async () => {
    // Org 5: cap 500, no workspaces; each request creates one with budget 60: eight fit.
    const rs = await fire('POST', '/v2/workspaces', org5Keys, (i) => ({ name: `burst-${i}`, dailyWarmupBudget: 60 }));
    const { ok, refused } = split(rs);
    expect(ok).toHaveLength(8);
    expect(refused).toHaveLength(42);
    const rows = await s.db.query(`SELECT name, daily_warmup_budget FROM workspaces WHERE organization_id = 5`);
    expect(rows).toHaveLength(8);
    expect(rows.reduce((x, w) => x + w.daily_warmup_budget, 0)).toBe(480);
    expect(new Set(rows.map((w) => w.name))).toEqual(new Set(ok.map((i) => `burst-${i}`)));
    // Every owner of org 5 became an owner of each created workspace.
    const [m] = await s.db.query(
      `SELECT count(*)::int AS n FROM memberships m JOIN workspaces w ON w.id = m.workspace_id WHERE w.organization_id = 5`,
    );
    expect(m.n).toBe(8 * RACERS);
  });
});

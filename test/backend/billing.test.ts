// Billing reads through the gateway: the plan, usage against the plan's limits, and the caller's
// resolved capabilities (billing:read, ADMIN).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { ALL_SCOPES, K } from '../fixtures/seed.js';
import { SCOPE_GRANTS } from '../../src/backend/billing/capabilities.js';

const clock = new FakeClock();
let s: Stack;
let n = 0;
const NOPLAN_WS = 'svc_ws_' + 'NoPlanWs00000000000000000000000000001';
const FEW_SCOPES = 'svc_ws_' + 'FewScopes000000000000000000000000001';

beforeAll(async () => {
  s = await startStack({
    clock,
    extra: {
      organizations: [{ id: 7, name: 'No plan', plan: null, warmupCap: null }],
      users: [{ id: 70, organizationId: 7, email: 'owner@noplan.test', orgRole: 'OWNER' }],
      workspaces: [{ id: 700, organizationId: 7, name: 'NP' }],
      memberships: [{ workspaceId: 700, userId: 70, role: 'OWNER' }],
      apiKeys: [
        { id: 7000, secret: NOPLAN_WS, name: 'np', workspaceId: 700, scopes: ALL_SCOPES, createdBy: 70 },
        {
          id: 1099,
          secret: FEW_SCOPES,
          name: 'few',
          workspaceId: 100,
          role: 'ADMIN',
          scopes: ['billing:read', 'accounts:read'],
          createdBy: 10,
        },
      ],
    },
  });
});
afterAll(async () => s?.close());
beforeEach(() => clock.advance(60_000));

const get = (path: string, key: string) => s.request('GET', path, { key, ip: `10.34.0.${++n}` });
const plans = JSON.parse(readFileSync('config/plans.json', 'utf8'));

describe('GET /v2/workspaces/{wid}/billing/plan', () => {
  it("answers the organization's plan from config/plans.json", async () => {
    const r = await get('/v2/workspaces/100/billing/plan', K.wsAdmin);
    expect(r.status).toBe(200);
    const g = plans.growth;
    expect(r.body.data).toEqual({
      organizationId: 1,
      id: 'growth',
      effectivePlan: 'growth',
      label: g.label,
      apiAccess: true,
      budgets: { read: g.read, write: g.write, bulk: g.bulk, windowSeconds: 60, ipPerMinute: 100 },
      maxWarmupPerAccount: g.maxWarmupPerAccount,
      warmingMailboxCap: g.warmingMailboxCap,
      entitlements: g.entitlements,
      orgLimit: 1000,
    });
  });

  it('an organization without a plan gets the Free budgets, with id null', async () => {
    const r = await get('/v2/workspaces/700/billing/plan', NOPLAN_WS);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      id: null,
      effectivePlan: 'free',
      label: 'No plan',
      budgets: { read: plans.free.read },
      warmingMailboxCap: plans.free.warmingMailboxCap,
      orgLimit: null,
    });
  });

  it('needs billing:read at ADMIN (gateway 150003)', async () => {
    expect((await get('/v2/workspaces/100/billing/plan', K.wsViewer)).body.errorCode).toBe('150003');
    expect((await get('/v2/workspaces/100/billing/plan', K.editorPk)).body.errorCode).toBe('150003');
    expect((await get('/v2/workspaces/100/billing/plan', K.wsNoScope)).body.errorCode).toBe('150003');
  });
});

describe('GET /v2/workspaces/{wid}/billing/usage', () => {
  it("reports mailboxes and budgets against the plan's limits", async () => {
    const r = await get('/v2/workspaces/100/billing/usage', K.wsAdmin);
    expect(r.status).toBe(200);
    // Org 1: 5000 warming, 5001 active, 5002 paused (workspace 100); 5100 active (workspace 101).
    expect(r.body.data).toEqual({
      organizationId: 1,
      plan: 'growth',
      effectivePlan: 'growth',
      mailboxes: { connected: 4, warming: 1, warmingCap: 50, warmingAvailable: 49, maxWarmupPerAccount: 50 },
      warmupBudgets: { orgLimit: 1000, allocated: 300, available: 700, workspaces: 2 },
      workspace: { workspaceId: 100, connected: 3, warming: 1, dailyWarmupBudget: 200 },
    });
  });

  it('follows changes: a disconnected mailbox no longer counts', async () => {
    await s.db.query(`UPDATE accounts SET status = 'disconnected' WHERE id = 5100`);
    const r = await get('/v2/workspaces/101/billing/usage', K.wsOther);
    expect(r.body.data.mailboxes.connected).toBe(3);
    expect(r.body.data.workspace).toEqual({ workspaceId: 101, connected: 0, warming: 0, dailyWarmupBudget: 100 });
    await s.db.query(`UPDATE accounts SET status = 'active' WHERE id = 5100`);
  });

  it('never counts another organization', async () => {
    const r = await get('/v2/workspaces/700/billing/usage', NOPLAN_WS);
    expect(r.body.data.mailboxes).toMatchObject({ connected: 0, warming: 0 });
    expect(r.body.data.warmupBudgets).toMatchObject({ orgLimit: null, available: null, workspaces: 1 });
  });
});

describe('GET /v2/workspaces/{wid}/billing/capabilities', () => {
  it('a workspace key: its stamped role, its scopes, and what each allows', async () => {
    const r = await get('/v2/workspaces/100/billing/capabilities', FEW_SCOPES);
    expect(r.status).toBe(200);
    const d = r.body.data;
    expect(d).toMatchObject({
      keyId: 1099,
      keyType: 'workspace',
      workspaceId: 100,
      role: 'ADMIN',
      orgRole: null,
      plan: 'growth',
      entitlements: plans.growth.entitlements,
    });
    const by = Object.fromEntries(d.scopes.map((x: any) => [x.scope, x]));
    expect(Object.keys(by).sort()).toEqual([...ALL_SCOPES].sort());
    expect(by['billing:read']).toMatchObject({ held: true, minimumRole: 'ADMIN', allowed: true, reason: null });
    expect(by['accounts:read']).toMatchObject({ held: true, allowed: true });
    expect(by['accounts:write']).toMatchObject({ held: false, allowed: false, reason: 'scope not held by the key' });
    expect(by['workspace:provision']).toMatchObject({ held: false, minimumRole: 'ORG_OWNER', allowed: false });
    expect(typeof by['tags:write'].grants).toBe('string');
  });

  it('an ADMIN workspace key holding every scope is still not an organization owner', async () => {
    const r = await get('/v2/workspaces/100/billing/capabilities', K.wsAdmin);
    const by = Object.fromEntries(r.body.data.scopes.map((x: any) => [x.scope, x]));
    expect(by['workspace:manage'].allowed).toBe(true);
    expect(by['workspace:quota']).toMatchObject({
      held: true,
      allowed: false,
      reason: 'needs a personal key of an organization owner',
    });
  });

  it('a personal key of an owner: the live membership role and organization role', async () => {
    const r = await get('/v2/workspaces/100/billing/capabilities', K.ownerPk);
    expect(r.body.data).toMatchObject({ keyType: 'personal', role: 'OWNER', orgRole: 'OWNER' });
    expect(r.body.data.scopes.every((x: any) => x.allowed)).toBe(true);
  });

  it('the minimum roles agree with config/routes.json', () => {
    const routes = JSON.parse(readFileSync('config/routes.json', 'utf8'));
    expect(Object.fromEntries(Object.entries(SCOPE_GRANTS).map(([k, v]) => [k, v.minimumRole]))).toEqual(routes.scopes);
  });
});

// Provisioning and budgets of /v2 (spec, Endpoints; CONTRACT section 6): the routes without a workspace
// segment. The gateway already required workspace:provision / workspace:quota and a personal key of an
// organization owner (or, on GET /v2/workspaces, a workspace key holding workspace:read).
import { ApiError } from '../../http/errors.js';
import { parse, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import type { Row } from '../../db/types.js';
import { allocatedOf, assertWithinCap, quotasView, readOrgBudget, setBudgets } from './quotas.js';
import { createBody, quotasBody } from './schemas.js';

function element(w: Row, role: string | null) {
  return {
    id: w.id,
    organizationId: w.organization_id,
    name: w.name,
    dailyWarmupBudget: w.daily_warmup_budget,
    role,
    createdAt: new Date(w.created_at).toISOString(),
  };
}

/** Defence in depth behind the gateway's step 10: provisioning needs a personal key of an organization owner. */
async function assertOrgOwner(ctx: Ctx): Promise<number> {
  const id = ctx.identity!;
  if (id.keyType !== 'personal' || id.userId === null) throw new ApiError('forbidden', 'Provisioning needs a personal key of an organization owner.');
  const rows = await ctx.db.query(`SELECT org_role FROM users WHERE id = $1 AND organization_id = $2`, [id.userId, id.organizationId]);
  if (rows[0]?.org_role !== 'OWNER') throw new ApiError('forbidden', 'Provisioning needs a personal key of an organization owner.');
  return id.userId;
}

export function register(router: Router, _svc: BackendServices): void {
  router.get('/v2/workspaces', async (ctx) => {
    const id = ctx.identity!;
    if (id.keyType === 'workspace') {
      // A workspace key sees exactly its own workspace (spec, creation and listing rule 3).
      const rows = await ctx.db.query(
        `SELECT * FROM workspaces WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`,
        [id.workspaceId, id.organizationId],
      );
      if (!rows.length) throw new ApiError('forbidden', 'The key\'s workspace no longer exists.');
      return { data: [element(rows[0], id.role)] };
    }
    const userId = await assertOrgOwner(ctx);
    // Every live workspace of the organization, with the role the key acts at there (null where the
    // owner holds no membership: the key cannot act in that workspace until one is added).
    const rows = await ctx.db.query(
      `SELECT w.*, m.role FROM workspaces w LEFT JOIN memberships m ON m.workspace_id = w.id AND m.user_id = $2
        WHERE w.organization_id = $1 AND w.deleted_at IS NULL ORDER BY w.id`,
      [id.organizationId, userId],
    );
    return { data: rows.map((w) => element(w, w.role ?? null)) };
  });

  router.post('/v2/workspaces', async (ctx) => {
    const userId = await assertOrgOwner(ctx);
    const b = parse(createBody, ctx.body ?? {});
    const orgId = ctx.identity!.organizationId;
    if (b.dailyWarmupBudget !== undefined && !ctx.identity!.scopes.includes('workspace:quota')) {
      throw new ApiError('forbidden', 'Setting dailyWarmupBudget also needs the workspace:quota scope.', { field: 'dailyWarmupBudget', scope: 'workspace:quota' });
    }
    const created = await ctx.db.tx(async (q) => {
      const cur = await readOrgBudget(q, orgId, true);
      const budgetValue = b.dailyWarmupBudget ?? 0;
      assertWithinCap(cur, allocatedOf(cur) + budgetValue);
      const [w] = await q.query(
        `INSERT INTO workspaces (organization_id, name, daily_warmup_budget, created_at) VALUES ($1, $2, $3, $4) RETURNING *`,
        [orgId, b.name, budgetValue, new Date(ctx.svc.clock.now())],
      );
      // The creator and every owner of the organization become owners (spec, creation rule 1); the
      // creator is an organization owner (the gateway's step 10), so one statement covers both.
      await q.query(
        `INSERT INTO memberships (workspace_id, user_id, role)
         SELECT $1, u.id, 'OWNER' FROM users u WHERE u.organization_id = $2 AND (u.org_role = 'OWNER' OR u.id = $3)
         ON CONFLICT (workspace_id, user_id) DO NOTHING`,
        [w.id, orgId, userId],
      );
      const members = await q.query(
        `SELECT m.user_id, m.role FROM memberships m WHERE m.workspace_id = $1 ORDER BY m.user_id`,
        [w.id],
      );
      return { w, members };
    });
    // New memberships are access data: the creator's key may use the workspace on its next request.
    await ctx.svc.accessChanged(orgId);
    ctx.svc.log.info({ organizationId: orgId, workspaceId: created.w.id }, 'workspace created');
    return {
      status: 201,
      data: { ...element(created.w, 'OWNER'), members: created.members.map((m) => ({ userId: m.user_id, role: m.role })) },
    };
  });

  router.get('/v2/workspaces/quotas', async (ctx) => {
    await assertOrgOwner(ctx);
    return { data: quotasView(await readOrgBudget(ctx.db, ctx.identity!.organizationId, false)) };
  });

  router.patch('/v2/workspaces/quotas', async (ctx) => {
    await assertOrgOwner(ctx);
    const b = parse(quotasBody, ctx.body ?? {});
    const orgId = ctx.identity!.organizationId;
    const after = await ctx.db.tx((q) => setBudgets(q, orgId, b.quotas));
    const changed = new Set(b.quotas.map((x) => x.workspaceId));
    return { data: { ...quotasView(after), updated: after.workspaces.filter((w) => changed.has(w.workspaceId)) } };
  });
}

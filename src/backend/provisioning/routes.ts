// Provisioning and budgets of /v2 (spec, Endpoints; docs/decisions.md section 6): the routes without a workspace
// segment. The gateway already required workspace:provision / workspace:quota and a personal key of an
// organization owner (or, on GET /v2/workspaces, a workspace key holding workspace:read).
import { ApiError } from '../../http/errors.js';
import { parse, type Ctx, type Router } from '../router.js';
import type { Row } from '../../db/types.js';
import { recordAudit } from '../../access/service/audit.js';
import { allocatedOf, assertWithinCap, quotasView, readOrgBudget, setBudgets } from './quotas.js';
import { createBody, quotasBody } from './schemas.js';
import { addOwners, findLiveWorkspace, insertWorkspace, liveWorkspacesWithRole, orgRoleOf } from './queries.js';

function element(workspace: Row, role: string | null) {
  return {
    id: workspace.id,
    organizationId: workspace.organization_id,
    name: workspace.name,
    dailyWarmupBudget: workspace.daily_warmup_budget,
    role,
    createdAt: new Date(workspace.created_at).toISOString(),
  };
}

/** Defence in depth behind the gateway's step 10: provisioning needs a personal key of an organization owner. */
async function assertOrgOwner(ctx: Ctx): Promise<number> {
  const id = ctx.identity!;
  if (id.keyType !== 'personal' || id.userId === null)
    throw new ApiError('forbidden', 'Provisioning needs a personal key of an organization owner.');
  if ((await orgRoleOf(ctx.db, id.userId, id.organizationId)) !== 'OWNER')
    throw new ApiError('forbidden', 'Provisioning needs a personal key of an organization owner.');
  return id.userId;
}

export function register(router: Router): void {
  router.get('/v2/workspaces', async (ctx) => {
    const id = ctx.identity!;
    if (id.keyType === 'workspace') {
      // A workspace key sees exactly its own workspace (spec, creation and listing rule 3).
      const workspace =
        id.workspaceId === null ? null : await findLiveWorkspace(ctx.db, id.workspaceId, id.organizationId);
      if (!workspace) throw new ApiError('forbidden', "The key's workspace no longer exists.");
      return { data: [element(workspace, id.role)] };
    }
    const userId = await assertOrgOwner(ctx);
    // Every live workspace of the organization, with the role the key acts at there (null where the
    // owner holds no membership: the key cannot act in that workspace until one is added).
    const workspaces = await liveWorkspacesWithRole(ctx.db, id.organizationId, userId);
    return { data: workspaces.map((workspace) => element(workspace, workspace.role ?? null)) };
  });

  router.post('/v2/workspaces', async (ctx) => {
    const userId = await assertOrgOwner(ctx);
    const create = parse(createBody, ctx.body ?? {});
    const orgId = ctx.identity!.organizationId;
    if (create.dailyWarmupBudget !== undefined && !ctx.identity!.scopes.includes('workspace:quota')) {
      throw new ApiError('forbidden', 'Setting dailyWarmupBudget also needs the workspace:quota scope.', {
        field: 'dailyWarmupBudget',
        scope: 'workspace:quota',
      });
    }
    const created = await ctx.db.tx(async (tx) => {
      const budget = await readOrgBudget(tx, orgId, true);
      const dailyWarmupBudget = create.dailyWarmupBudget ?? 0;
      assertWithinCap(budget, allocatedOf(budget) + dailyWarmupBudget);
      const workspace = await insertWorkspace(tx, orgId, create.name, dailyWarmupBudget, new Date(ctx.svc.clock.now()));
      // The creator is an organization owner (the gateway's step 10), so one statement adds both.
      const members = await addOwners(tx, workspace.id, orgId, userId);
      // New memberships are access data: audited in the transaction (docs/service-layer.md, The audit trail).
      await recordAudit(
        tx,
        { actor: { kind: 'api-key', id: ctx.identity!.keyId }, requestId: ctx.requestId },
        {
          action: 'workspace.create',
          targetType: 'workspace',
          targetIds: [workspace.id],
          organizationId: orgId,
          after: {
            ...element(workspace, 'OWNER'),
            members: members.map((member) => ({ userId: member.user_id, role: member.role })),
          },
        },
      );
      return { workspace, members };
    });
    // New memberships are access data: the creator's key may use the workspace on its next request.
    await ctx.svc.accessChanged(orgId);
    ctx.svc.log.info({ organizationId: orgId, workspaceId: created.workspace.id }, 'workspace created');
    return {
      status: 201,
      data: {
        ...element(created.workspace, 'OWNER'),
        members: created.members.map((member) => ({ userId: member.user_id, role: member.role })),
      },
    };
  });

  router.get('/v2/workspaces/quotas', async (ctx) => {
    await assertOrgOwner(ctx);
    return { data: quotasView(await readOrgBudget(ctx.db, ctx.identity!.organizationId, false)) };
  });

  router.patch('/v2/workspaces/quotas', async (ctx) => {
    await assertOrgOwner(ctx);
    const body = parse(quotasBody, ctx.body ?? {});
    const orgId = ctx.identity!.organizationId;
    const after = await ctx.db.tx((q) => setBudgets(q, orgId, body.quotas));
    const changed = new Set(body.quotas.map((x) => x.workspaceId));
    return { data: { ...quotasView(after), updated: after.workspaces.filter((w) => changed.has(w.workspaceId)) } };
  });
}

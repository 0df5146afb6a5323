// The workspace domain of /v2 (CONTRACT section 6): read and rename the path workspace; list, invite,
// re-role and remove its members. Every query is scoped by the path workspace; membership changes are
// access data, so the gateways are told after each commit.
import { ApiError } from '../../http/errors.js';
import { idParam, parse, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { inviteBody, renameBody, reroleBody } from './schemas.js';
import { inviteMember, listMembers, removeMember, reroleMember } from './members.js';

export function register(router: Router, _svc: BackendServices): void {
  router.get('/v2/workspaces/{workspaceId}', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    return { data: await readWorkspace(ctx, wid) };
  });

  // Rename only: the budget belongs to PATCH /v2/workspaces/quotas, so `dailyWarmupBudget` here is an
  // unknown field (400 invalid_request naming it).
  router.patch('/v2/workspaces/{workspaceId}', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const b = parse(renameBody, ctx.body ?? {});
    const rows = await ctx.db.query(
      `UPDATE workspaces SET name = $2 WHERE id = $1 AND organization_id = $3 AND deleted_at IS NULL RETURNING id`,
      [wid, b.name, org(ctx)],
    );
    if (!rows.length) throw new ApiError('not_found', `No workspace ${wid}.`);
    return { data: await readWorkspace(ctx, wid) };
  });

  router.get('/v2/workspaces/{workspaceId}/members', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    await liveWorkspace(ctx, wid);
    return { data: await listMembers(ctx.db, wid) };
  });

  router.post('/v2/workspaces/{workspaceId}/members', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const b = parse(inviteBody, ctx.body ?? {});
    const r = await inviteMember(ctx.db, { organizationId: org(ctx), workspaceId: wid, callerRole: ctx.identity?.role ?? null }, b);
    await ctx.svc.accessChanged(org(ctx));
    ctx.svc.log.info({ workspaceId: wid, userId: r.member.userId, role: r.member.role, userCreated: r.userCreated }, 'member invited');
    return { status: 201, data: { ...r.member, userCreated: r.userCreated } };
  });

  router.patch('/v2/workspaces/{workspaceId}/members/{userId}', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const uid = idParam(ctx, 'userId');
    const b = parse(reroleBody, ctx.body ?? {});
    const member = await reroleMember(ctx.db, { organizationId: org(ctx), workspaceId: wid, callerRole: ctx.identity?.role ?? null }, uid, b.role);
    // Re-roles apply to the very next request on every gateway (spec, Authentication rule 2).
    await ctx.svc.accessChanged(org(ctx));
    return { data: member };
  });

  router.delete('/v2/workspaces/{workspaceId}/members/{userId}', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const uid = idParam(ctx, 'userId');
    const removed = await removeMember(ctx.db, { organizationId: org(ctx), workspaceId: wid, callerRole: ctx.identity?.role ?? null }, uid);
    await ctx.svc.accessChanged(org(ctx));
    return { data: { ...removed, removed: true } };
  });
}

function org(ctx: Ctx): number {
  return ctx.identity!.organizationId;
}

async function liveWorkspace(ctx: Ctx, wid: number) {
  const rows = await ctx.db.query(
    `SELECT id, organization_id, name, daily_warmup_budget, created_at FROM workspaces
      WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`,
    [wid, org(ctx)],
  );
  if (!rows.length) throw new ApiError('not_found', `No workspace ${wid}.`);
  return rows[0];
}

async function readWorkspace(ctx: Ctx, wid: number) {
  const w = await liveWorkspace(ctx, wid);
  const [counts] = await ctx.db.query(
    `SELECT (SELECT count(*)::int FROM memberships WHERE workspace_id = $1) AS members,
            (SELECT count(*)::int FROM accounts WHERE workspace_id = $1) AS accounts`,
    [wid],
  );
  return {
    id: w.id,
    organizationId: w.organization_id,
    name: w.name,
    dailyWarmupBudget: w.daily_warmup_budget,
    // The role the calling key acts at in this workspace (membership role or stamped key role).
    role: ctx.identity?.role ?? null,
    memberCount: counts.members,
    accountCount: counts.accounts,
    createdAt: new Date(w.created_at).toISOString(),
  };
}

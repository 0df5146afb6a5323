// The workspace domain of /v2 (docs/decisions.md section 6): read and rename the path workspace; list, invite,
// re-role and remove its members. Every query is scoped by the path workspace; membership changes are
// access data, so each is audited with the calling key as its actor and the gateways are told after
// each commit.
import { ApiError } from '../../http/errors.js';
import { idParam, parse, type Ctx, type Router } from '../router.js';
import { inviteBody, renameBody, reroleBody } from './schemas.js';
import { inviteMember, listMembers, removeMember, reroleMember, type MemberScope } from './members.js';
import { countMembersAndAccounts, findLiveWorkspace, renameWorkspace } from './queries.js';

export function register(router: Router): void {
  router.get('/v2/workspaces/{workspaceId}', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    return { data: await readWorkspace(ctx, wid) };
  });

  // Rename only: the budget belongs to PATCH /v2/workspaces/quotas, so `dailyWarmupBudget` here is an
  // unknown field (400 invalid_request naming it).
  router.patch('/v2/workspaces/{workspaceId}', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const { name } = parse(renameBody, ctx.body ?? {});
    if (!(await renameWorkspace(ctx.db, wid, org(ctx), name))) throw new ApiError('not_found', `No workspace ${wid}.`);
    return { data: await readWorkspace(ctx, wid) };
  });

  router.get('/v2/workspaces/{workspaceId}/members', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    await liveWorkspace(ctx, wid);
    return { data: await listMembers(ctx.db, wid) };
  });

  router.post('/v2/workspaces/{workspaceId}/members', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const invite = parse(inviteBody, ctx.body ?? {});
    const invited = await inviteMember(ctx.db, memberScope(ctx, wid), invite);
    await ctx.svc.accessChanged(org(ctx));
    ctx.svc.log.info(
      { workspaceId: wid, userId: invited.member.userId, role: invited.member.role, userCreated: invited.userCreated },
      'member invited',
    );
    return { status: 201, data: { ...invited.member, userCreated: invited.userCreated } };
  });

  router.patch('/v2/workspaces/{workspaceId}/members/{userId}', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const uid = idParam(ctx, 'userId');
    const { role } = parse(reroleBody, ctx.body ?? {});
    const member = await reroleMember(ctx.db, memberScope(ctx, wid), uid, role);
    // Re-roles apply to the very next request on every gateway (spec, Authentication rule 2).
    await ctx.svc.accessChanged(org(ctx));
    return { data: member };
  });

  router.delete('/v2/workspaces/{workspaceId}/members/{userId}', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const uid = idParam(ctx, 'userId');
    const removed = await removeMember(ctx.db, memberScope(ctx, wid), uid);
    await ctx.svc.accessChanged(org(ctx));
    return { data: { ...removed, removed: true } };
  });
}

function org(ctx: Ctx): number {
  return ctx.identity!.organizationId;
}

function memberScope(ctx: Ctx, wid: number): MemberScope {
  return {
    organizationId: org(ctx),
    workspaceId: wid,
    callerRole: ctx.identity?.role ?? null,
    audit: { actor: { kind: 'api-key', id: ctx.identity!.keyId }, requestId: ctx.requestId },
  };
}

async function liveWorkspace(ctx: Ctx, wid: number) {
  const workspace = await findLiveWorkspace(ctx.db, wid, org(ctx));
  if (!workspace) throw new ApiError('not_found', `No workspace ${wid}.`);
  return workspace;
}

async function readWorkspace(ctx: Ctx, wid: number) {
  const workspace = await liveWorkspace(ctx, wid);
  const counts = await countMembersAndAccounts(ctx.db, wid);
  return {
    id: workspace.id,
    organizationId: workspace.organization_id,
    name: workspace.name,
    dailyWarmupBudget: workspace.daily_warmup_budget,
    // The role the calling key acts at in this workspace (membership role or stamped key role).
    role: ctx.identity?.role ?? null,
    memberCount: counts.members,
    accountCount: counts.accounts,
    createdAt: new Date(workspace.created_at).toISOString(),
  };
}

// Billing reads of /v2 (docs/decisions.md section 6; billing:read, ADMIN, enforced by the gateway): the
// organization's plan, its usage against the plan's limits, and the caller's resolved capabilities.
import { ApiError } from '../../http/errors.js';
import type { Row } from '../../db/types.js';
import { planOf } from '../../config/plans.js';
import { idParam, type Ctx, type Router } from '../router.js';
import { readOrgBudget, quotasView } from '../provisioning/index.js';
import { resolveCapabilities } from './capabilities.js';
import { findOrganization, mailboxCounts, orgRoleOf } from './queries.js';
import { IP_LIMIT, WINDOW_SECONDS } from '../../config/contract.js';

async function organization(ctx: Ctx) {
  const orgId = ctx.identity!.organizationId;
  const found = await findOrganization(ctx.db, orgId);
  if (!found) throw new ApiError('not_found', `No organization ${orgId}.`);
  return found;
}

function planView(ctx: Ctx, organization: Row) {
  const { id, plan } = planOf(ctx.svc.plans(), organization.plan);
  return {
    // null when the organization has no plan: the Free budgets apply (spec, Limits rule 1).
    id: organization.plan as string | null,
    effectivePlan: id,
    label: organization.plan ? plan.label : 'No plan',
    apiAccess: organization.api_access,
    budgets: {
      read: plan.read,
      write: plan.write,
      bulk: plan.bulk,
      windowSeconds: WINDOW_SECONDS,
      ipPerMinute: IP_LIMIT,
    },
    maxWarmupPerAccount: plan.maxWarmupPerAccount,
    warmingMailboxCap: plan.warmingMailboxCap,
    entitlements: plan.entitlements,
    orgLimit: organization.warmup_cap as number | null,
  };
}

export function register(router: Router): void {
  router.get('/v2/workspaces/{workspaceId}/billing/plan', async (ctx) => {
    idParam(ctx, 'workspaceId');
    const org = await organization(ctx);
    return { data: { organizationId: org.id, ...planView(ctx, org) } };
  });

  router.get('/v2/workspaces/{workspaceId}/billing/usage', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const org = await organization(ctx);
    const plan = planView(ctx, org);
    const counts = await mailboxCounts(ctx.db, org.id, wid);
    const budgets = quotasView(await readOrgBudget(ctx.db, org.id, false));
    const workspaceBudget = budgets.workspaces.find((workspace) => workspace.workspaceId === wid);
    return {
      data: {
        organizationId: org.id,
        plan: plan.id,
        effectivePlan: plan.effectivePlan,
        mailboxes: {
          connected: counts.connected,
          warming: counts.warming,
          warmingCap: plan.warmingMailboxCap,
          warmingAvailable:
            plan.warmingMailboxCap === null ? null : Math.max(0, plan.warmingMailboxCap - counts.warming),
          maxWarmupPerAccount: plan.maxWarmupPerAccount,
        },
        warmupBudgets: {
          orgLimit: budgets.orgLimit,
          allocated: budgets.allocated,
          available: budgets.available,
          workspaces: budgets.workspaces.length,
        },
        workspace: {
          workspaceId: wid,
          connected: counts.ws_connected,
          warming: counts.ws_warming,
          dailyWarmupBudget: workspaceBudget?.dailyWarmupBudget ?? null,
        },
      },
    };
  });

  router.get('/v2/workspaces/{workspaceId}/billing/capabilities', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const id = ctx.identity!;
    const org = await organization(ctx);
    const orgRole = id.keyType === 'personal' && id.userId !== null ? await orgRoleOf(ctx.db, id.userId, org.id) : null;
    const plan = planView(ctx, org);
    return {
      data: {
        keyId: id.keyId,
        keyType: id.keyType,
        workspaceId: wid,
        // The role the key acts at in this workspace: a workspace key's stamped role, or the user's live membership role.
        role: id.role,
        orgRole,
        plan: plan.id,
        effectivePlan: plan.effectivePlan,
        scopes: resolveCapabilities({ keyType: id.keyType, role: id.role, orgRole, scopes: id.scopes }),
        entitlements: plan.entitlements,
        rateLimits: plan.budgets,
      },
    };
  });
}

// Billing reads of /v2 (CONTRACT section 6; billing:read, ADMIN, enforced by the gateway): the
// organization's plan, its usage against the plan's limits, and the caller's resolved capabilities.
import { ApiError } from '../../http/errors.js';
import { planOf } from '../../config/plans.js';
import { idParam, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { readOrgBudget, quotasView } from '../provisioning/quotas.js';
import { resolveCapabilities } from './capabilities.js';

/** The per-IP layer is flat for every plan (spec, Limits, layer 2). */
const IP_LIMIT_PER_MINUTE = 100;

async function organization(ctx: Ctx) {
  const orgId = ctx.identity!.organizationId;
  const rows = await ctx.db.query(`SELECT id, name, plan, api_access, paused, warmup_cap FROM organizations WHERE id = $1`, [orgId]);
  if (!rows.length) throw new ApiError('not_found', `No organization ${orgId}.`);
  return rows[0];
}

function planView(ctx: Ctx, o: Record<string, any>) {
  const { id, plan } = planOf(ctx.svc.plans(), o.plan);
  return {
    // null when the organization has no plan: the Free budgets apply (spec, Limits rule 1).
    id: o.plan as string | null,
    effectivePlan: id,
    label: o.plan ? plan.label : 'No plan',
    apiAccess: o.api_access,
    budgets: { read: plan.read, write: plan.write, bulk: plan.bulk, windowSeconds: 60, ipPerMinute: IP_LIMIT_PER_MINUTE },
    maxWarmupPerAccount: plan.maxWarmupPerAccount,
    warmingMailboxCap: plan.warmingMailboxCap,
    entitlements: plan.entitlements,
    orgLimit: o.warmup_cap as number | null,
  };
}

export function register(router: Router, _svc: BackendServices): void {
  router.get('/v2/workspaces/{workspaceId}/billing/plan', async (ctx) => {
    idParam(ctx, 'workspaceId');
    const o = await organization(ctx);
    return { data: { organizationId: o.id, ...planView(ctx, o) } };
  });

  router.get('/v2/workspaces/{workspaceId}/billing/usage', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const o = await organization(ctx);
    const p = planView(ctx, o);
    const [m] = await ctx.db.query(
      `SELECT count(*) FILTER (WHERE a.status <> 'disconnected')::int AS connected,
              count(*) FILTER (WHERE a.status = 'warming')::int AS warming,
              count(*) FILTER (WHERE a.status <> 'disconnected' AND a.workspace_id = $2)::int AS ws_connected,
              count(*) FILTER (WHERE a.status = 'warming' AND a.workspace_id = $2)::int AS ws_warming
         FROM accounts a JOIN workspaces w ON w.id = a.workspace_id
        WHERE w.organization_id = $1 AND w.deleted_at IS NULL`,
      [o.id, wid],
    );
    const budgets = quotasView(await readOrgBudget(ctx.db, o.id, false));
    const ws = budgets.workspaces.find((w) => w.workspaceId === wid);
    return {
      data: {
        organizationId: o.id,
        plan: p.id,
        effectivePlan: p.effectivePlan,
        mailboxes: {
          connected: m.connected,
          warming: m.warming,
          warmingCap: p.warmingMailboxCap,
          warmingAvailable: p.warmingMailboxCap === null ? null : Math.max(0, p.warmingMailboxCap - m.warming),
          maxWarmupPerAccount: p.maxWarmupPerAccount,
        },
        warmupBudgets: { orgLimit: budgets.orgLimit, allocated: budgets.allocated, available: budgets.available, workspaces: budgets.workspaces.length },
        workspace: {
          workspaceId: wid,
          connected: m.ws_connected,
          warming: m.ws_warming,
          dailyWarmupBudget: ws?.dailyWarmupBudget ?? null,
        },
      },
    };
  });

  router.get('/v2/workspaces/{workspaceId}/billing/capabilities', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const id = ctx.identity!;
    const o = await organization(ctx);
    let orgRole: 'OWNER' | 'MEMBER' | null = null;
    if (id.keyType === 'personal' && id.userId !== null) {
      const u = await ctx.db.query(`SELECT org_role FROM users WHERE id = $1 AND organization_id = $2`, [id.userId, o.id]);
      orgRole = u[0]?.org_role ?? null;
    }
    const p = planView(ctx, o);
    return {
      data: {
        keyId: id.keyId,
        keyType: id.keyType,
        workspaceId: wid,
        // The role the key acts at in this workspace: a workspace key's stamped role, or the user's live membership role.
        role: id.role,
        orgRole,
        plan: p.id,
        effectivePlan: p.effectivePlan,
        scopes: resolveCapabilities({ keyType: id.keyType, role: id.role, orgRole, scopes: id.scopes }),
        entitlements: p.entitlements,
        rateLimits: p.budgets,
      },
    };
  });
}

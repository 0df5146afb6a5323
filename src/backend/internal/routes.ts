// Internal admin routes for the billing system (CONTRACT section 7): Envelope B, bearer INTERNAL_TOKEN.
// Every change here is access data: the gateways see it on their very next request.
import { ApiError } from '../../http/errors.js';
import { planOf } from '../../config/plans.js';
import { parse, idParam, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { requireInternal } from './auth.js';
import { applyPlanCap } from '../warmup/index.js';
import { orgPatch } from './schemas.js';
import { lockOrganization, softDeleteWorkspace, updateOrganization } from './queries.js';
import { LimitsError, setOrganizationLimits, type LimitsView } from '../../access/service/limits.js';

function orgView(org: Record<string, any>) {
  return {
    id: org.id,
    name: org.name,
    plan: org.plan,
    apiAccess: org.api_access,
    paused: org.paused,
    warmupCap: org.warmup_cap,
    partnerCallback: org.partner_callback_url ? { url: org.partner_callback_url, verified: org.partner_callback_verified } : null,
  };
}

export function register(router: Router, _svc: BackendServices): void {
  router.patch('/internal/organizations/{organizationId}', async (ctx) => {
    requireInternal(ctx);
    const id = idParam(ctx, 'organizationId');
    const patch = parse(orgPatch, ctx.body ?? {});
    if (patch.plan != null && !Object.hasOwn(ctx.svc.plans(), patch.plan)) {
      throw new ApiError('invalid_request', `plan: no plan "${patch.plan}" in the plans file`, { field: 'plan', issues: [{ field: 'plan', message: 'unknown plan' }] });
    }
    const limitsCtx = { db: ctx.db, plans: () => ctx.svc.plans(), accessChanged: (org: number) => ctx.svc.accessChanged(org) };
    const result = await ctx.db.tx(async (tx) => {
      const current = await lockOrganization(tx, id);
      if (!current) throw new ApiError('not_found', `No organization ${id}.`);
      const updated = await updateOrganization(tx, id, {
        plan: patch.plan !== undefined ? patch.plan : current.plan,
        apiAccess: patch.apiAccess ?? current.api_access,
        paused: patch.paused ?? current.paused,
        warmupCap: patch.warmupCap !== undefined ? patch.warmupCap : current.warmup_cap,
        partnerCallbackUrl: patch.partnerCallback !== undefined ? (patch.partnerCallback?.url ?? null) : current.partner_callback_url,
        partnerCallbackVerified: patch.partnerCallback !== undefined ? (patch.partnerCallback?.verified ?? false) : current.partner_callback_verified,
      });
      // A plan change lowers every mailbox above the new plan's cap at once (spec, States).
      let lowered = 0;
      if (patch.plan !== undefined && patch.plan !== current.plan) {
        lowered = await applyPlanCap(tx, id, planOf(ctx.svc.plans(), patch.plan).plan.maxWarmupPerAccount);
      }
      let limits: LimitsView | undefined;
      if (patch.limits) {
        try {
          limits = await setOrganizationLimits(limitsCtx, id, patch.limits, tx);
        } catch (err) {
          if (err instanceof LimitsError) throw new ApiError('invalid_request', err.message);
          throw err;
        }
      }
      return { org: updated, lowered, limits };
    });
    await ctx.svc.accessChanged(id);
    ctx.svc.log.info({ organizationId: id, fields: Object.keys(patch) }, 'organization updated');
    const limits = patch.limits ? result.limits : undefined;
    return { data: { ...orgView(result.org), mailboxesLowered: result.lowered, ...(limits ? { limits: { overrides: limits.overrides, effective: limits.effective } } : {}) } };
  });

  router.delete('/internal/workspaces/{workspaceId}', async (ctx) => {
    requireInternal(ctx);
    const id = idParam(ctx, 'workspaceId');
    const deleted = await softDeleteWorkspace(ctx.db, id, new Date(ctx.svc.clock.now()));
    if (!deleted) throw new ApiError('not_found', `No workspace ${id}.`);
    await ctx.svc.accessChanged(deleted.organization_id);
    return { data: { id, organizationId: deleted.organization_id, name: deleted.name, deletedAt: deleted.deleted_at } };
  });
}

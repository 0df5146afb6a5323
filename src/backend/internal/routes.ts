// Internal admin routes for the billing system (CONTRACT section 7): Envelope B, bearer INTERNAL_TOKEN.
// Every change here is access data: the gateways see it on their very next request.
import { ApiError } from '../../http/errors.js';
import { planOf } from '../../config/plans.js';
import { parse, idParam, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { requireInternal } from './auth.js';
import { applyPlanCap } from '../warmup/index.js';
import { orgPatch } from './schemas.js';

function orgView(o: Record<string, any>) {
  return {
    id: o.id,
    name: o.name,
    plan: o.plan,
    apiAccess: o.api_access,
    paused: o.paused,
    warmupCap: o.warmup_cap,
    partnerCallback: o.partner_callback_url ? { url: o.partner_callback_url, verified: o.partner_callback_verified } : null,
  };
}

export function register(router: Router, _svc: BackendServices): void {
  router.patch('/internal/organizations/{organizationId}', async (ctx) => {
    requireInternal(ctx);
    const id = idParam(ctx, 'organizationId');
    const b = parse(orgPatch, ctx.body ?? {});
    const result = await ctx.db.tx(async (q) => {
      const cur = await q.query(`SELECT * FROM organizations WHERE id = $1 FOR UPDATE`, [id]);
      if (!cur.length) throw new ApiError('not_found', `No organization ${id}.`);
      const o = cur[0];
      const rows = await q.query(
        `UPDATE organizations SET plan = $2, api_access = $3, paused = $4, warmup_cap = $5,
           partner_callback_url = $6, partner_callback_verified = $7 WHERE id = $1 RETURNING *`,
        [
          id,
          b.plan !== undefined ? b.plan : o.plan,
          b.apiAccess ?? o.api_access,
          b.paused ?? o.paused,
          b.warmupCap !== undefined ? b.warmupCap : o.warmup_cap,
          b.partnerCallback !== undefined ? (b.partnerCallback?.url ?? null) : o.partner_callback_url,
          b.partnerCallback !== undefined ? (b.partnerCallback?.verified ?? false) : o.partner_callback_verified,
        ],
      );
      // A plan change lowers every mailbox above the new plan's cap at once (spec, States).
      let lowered = 0;
      if (b.plan !== undefined && b.plan !== o.plan) {
        lowered = await applyPlanCap(q, id, planOf(ctx.svc.plans(), b.plan).plan.maxWarmupPerAccount);
      }
      return { org: rows[0], lowered };
    });
    await ctx.svc.accessChanged(id);
    ctx.svc.log.info({ organizationId: id, fields: Object.keys(b) }, 'organization updated');
    return { data: { ...orgView(result.org), mailboxesLowered: result.lowered } };
  });

  router.delete('/internal/workspaces/{workspaceId}', async (ctx) => {
    requireInternal(ctx);
    const id = idParam(ctx, 'workspaceId');
    const rows = await ctx.db.query(
      `UPDATE workspaces SET deleted_at = coalesce(deleted_at, $2) WHERE id = $1 RETURNING id, organization_id, name, deleted_at`,
      [id, new Date(ctx.svc.clock.now())],
    );
    if (!rows.length) throw new ApiError('not_found', `No workspace ${id}.`);
    await ctx.svc.accessChanged(rows[0].organization_id);
    return { data: { id, organizationId: rows[0].organization_id, name: rows[0].name, deletedAt: rows[0].deleted_at } };
  });
}

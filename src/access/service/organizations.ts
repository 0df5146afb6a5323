// Organization operations: an organization's creation (a rest profile's consumer, docs/profiles.md), the access fields the billing system and operators change (plan, API
// access, pause, warmup cap, partner callback) and a workspace's soft deletion. Each writes in one
// transaction with its audit row and bumps the organization's access version after the commit.
import type { Row } from '../../db/types.js';
import { planOf } from '../../config/plans.js';
import { applyPlanCap } from './plan-cap.js';
import { checkLimitsChange, organizationLimitsIn, type LimitsChange } from './limits.js';
import { checkName } from './keys.js';
import { limitsChanged } from '../events/service-events.js';
import { recordAudit } from './audit.js';
import { nowOf, ServiceError, type ServiceContext } from './context.js';
import { PG_INT_MAX } from '../../config/contract.js';
import { isoOrNull } from '../../db/time.js';
import {
  insertOrganization,
  lockWorkspace,
  organizationRow,
  organizationRows,
  softDeleteWorkspace,
  updateOrganizationRow,
} from './queries.js';

export interface OrganizationView {
  id: number;
  name: string;
  plan: string | null;
  apiAccess: boolean;
  paused: boolean;
  warmupCap: number | null;
  partnerCallback: { url: string; verified: boolean } | null;
}

export function organizationView(o: Row): OrganizationView {
  return {
    id: o.id,
    name: o.name,
    plan: o.plan,
    apiAccess: o.api_access,
    paused: o.paused,
    warmupCap: o.warmup_cap,
    partnerCallback: o.partner_callback_url
      ? { url: o.partner_callback_url, verified: o.partner_callback_verified }
      : null,
  };
}

export interface OrganizationPatch {
  plan?: string | null;
  apiAccess?: boolean;
  paused?: boolean;
  warmupCap?: number | null;
  partnerCallback?: { url: string; verified: boolean } | null;
}

/** The action an audit row names for a patch: the one field changed, or a general update. */
function actionOf(p: OrganizationPatch): string {
  const fields = Object.keys(p);
  if (fields.length === 1 && fields[0] === 'paused') return p.paused ? 'organization.pause' : 'organization.resume';
  if (fields.length === 1 && fields[0] === 'plan') return 'organization.plan';
  return 'organization.update';
}

/**
 * Change an organization's access fields. A plan change lowers every mailbox above the new plan's
 * per-mailbox cap at once (spec, States), in the same transaction.
 */
export async function updateOrganization(
  ctx: ServiceContext,
  id: number,
  patch: OrganizationPatch,
): Promise<OrganizationView & { mailboxesLowered: number }> {
  if (!Object.keys(patch).length) throw new ServiceError('invalid', 'at least one field is required', 'empty');
  if (patch.plan != null && !(patch.plan in ctx.plans()))
    throw new ServiceError('invalid', `unknown plan ${JSON.stringify(patch.plan)}`, 'plan', 'plan');
  if (
    patch.warmupCap != null &&
    (!Number.isInteger(patch.warmupCap) || patch.warmupCap < 0 || patch.warmupCap > PG_INT_MAX)
  ) {
    throw new ServiceError('invalid', 'warmupCap must be a whole number from 0, or null', 'warmupCap', 'warmupCap');
  }
  if (ctx.actor.kind === 'user')
    throw new ServiceError('forbidden', 'organizations are changed by operators and the billing system', 'forbidden');
  const result = await ctx.db.tx(async (q) => {
    const cur = await organizationRow(q, id, true);
    if (!cur) throw new ServiceError('not_found', `no organization ${id}`, 'no_organization');
    const limitsBefore = patch.plan !== undefined ? await organizationLimitsIn(q, ctx.plans(), id) : null;
    const row = await updateOrganizationRow(q, id, {
      plan: patch.plan !== undefined ? patch.plan : cur.plan,
      apiAccess: patch.apiAccess ?? cur.api_access,
      paused: patch.paused ?? cur.paused,
      warmupCap: patch.warmupCap !== undefined ? patch.warmupCap : cur.warmup_cap,
      partnerCallbackUrl:
        patch.partnerCallback !== undefined ? (patch.partnerCallback?.url ?? null) : cur.partner_callback_url,
      partnerCallbackVerified:
        patch.partnerCallback !== undefined
          ? (patch.partnerCallback?.verified ?? false)
          : cur.partner_callback_verified,
    });
    let lowered = 0;
    if (patch.plan !== undefined && patch.plan !== cur.plan) {
      lowered = await applyPlanCap(q, id, planOf(ctx.plans(), patch.plan).plan.maxWarmupPerAccount);
    }
    // A plan change changes the limits the organization's keys get: told as limits.changed.
    if (limitsBefore) await limitsChanged(q, ctx, limitsBefore, await organizationLimitsIn(q, ctx.plans(), id));
    const after = organizationView(row);
    await recordAudit(q, ctx, {
      action: actionOf(patch),
      targetType: 'organization',
      targetIds: [id],
      organizationId: id,
      before: organizationView(cur),
      after: lowered ? { ...after, mailboxesLowered: lowered } : after,
    });
    return { ...after, mailboxesLowered: lowered };
  });
  await ctx.accessChanged(id);
  return result;
}

export interface NewOrganization {
  name: string;
  /** A plan of the plans in force; absent or null: none (the `free` plan's limits). */
  plan?: string | null;
  apiAccess?: boolean;
  paused?: boolean;
  /** Overrides of the plan's budgets and quota, as `keygate orgs limits` sets them. */
  limits?: LimitsChange;
}

/**
 * A new organization: under a rest profile a consumer, which its keys belong to (it has no workspaces);
 * made by operators only. Audited as `organization.create`; it holds no key yet, so no gateway has
 * anything of it to forget.
 */
export async function createOrganization(ctx: ServiceContext, input: NewOrganization): Promise<OrganizationView> {
  if (ctx.actor.kind === 'user')
    throw new ServiceError('forbidden', 'organizations are created by operators and the billing system', 'forbidden');
  const name = checkName(input.name);
  const plan = input.plan ?? null;
  if (plan !== null && !(plan in ctx.plans()))
    throw new ServiceError(
      'invalid',
      `plan: unknown plan ${JSON.stringify(plan)}; the plans are ${Object.keys(ctx.plans()).join(', ')}`,
      'plan',
      'plan',
    );
  const limits = input.limits ?? {};
  if (Object.keys(limits).length) checkLimitsChange(limits, false);
  return ctx.db.tx(async (q) => {
    const id = await insertOrganization(q, {
      name,
      plan,
      apiAccess: input.apiAccess ?? true,
      paused: input.paused ?? false,
      read: limits.read ?? null,
      write: limits.write ?? null,
      bulk: limits.bulk ?? null,
      monthlyQuota: limits.monthlyQuota ?? null,
    });
    const view = organizationView((await organizationRow(q, id))!);
    const after = { ...view, limits: (await organizationLimitsIn(q, ctx.plans(), id)).overrides };
    await recordAudit(q, ctx, {
      action: 'organization.create',
      targetType: 'organization',
      targetIds: [id],
      organizationId: id,
      after,
    });
    return view;
  });
}

export const pauseOrganization = (ctx: ServiceContext, id: number) => updateOrganization(ctx, id, { paused: true });
export const resumeOrganization = (ctx: ServiceContext, id: number) => updateOrganization(ctx, id, { paused: false });
export const setPlan = (ctx: ServiceContext, id: number, plan: string | null) => updateOrganization(ctx, id, { plan });

export async function getOrganization(ctx: ServiceContext, id: number): Promise<OrganizationView> {
  const row = await organizationRow(ctx.db, id);
  if (!row) throw new ServiceError('not_found', `no organization ${id}`, 'no_organization');
  return organizationView(row);
}

export async function listOrganizations(
  ctx: ServiceContext,
  f: { afterId?: number; limit?: number } = {},
): Promise<OrganizationView[]> {
  const limit = f.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new ServiceError('invalid', 'limit must be 1 to 1000', 'limit', 'limit');
  const rows = await organizationRows(ctx.db, f.afterId ?? 0, limit);
  return rows.map(organizationView);
}

/** Soft-delete a workspace (the first deletion time stays): its keys and memberships stop at once. */
export async function deleteWorkspace(
  ctx: ServiceContext,
  id: number,
): Promise<{ id: number; organizationId: number; name: string; deletedAt: string }> {
  if (ctx.actor.kind === 'user')
    throw new ServiceError('forbidden', 'workspaces are deleted by operators and the billing system', 'forbidden');
  const now = nowOf(ctx);
  const result = await ctx.db.tx(async (q) => {
    const cur = await lockWorkspace(q, id);
    if (!cur) throw new ServiceError('not_found', `no workspace ${id}`, 'no_workspace');
    const row = await softDeleteWorkspace(q, id, now);
    const view = {
      id,
      organizationId: row.organization_id as number,
      name: row.name as string,
      deletedAt: new Date(row.deleted_at).toISOString(),
    };
    await recordAudit(q, ctx, {
      action: 'workspace.delete',
      targetType: 'workspace',
      targetIds: [id],
      organizationId: view.organizationId,
      before: { id, name: cur.name, deletedAt: isoOrNull(cur.deleted_at) },
      after: view,
    });
    return view;
  });
  await ctx.accessChanged(result.organizationId);
  return result;
}

// Internal admin routes for the billing system (docs/decisions.md section 7): Envelope B, bearer INTERNAL_TOKEN.
// Every change here is access data, made through the service layer (src/access/service/): audited
// with the actor `internal`, and seen by the gateways on their very next request.
import { ApiError } from '../../http/errors.js';
import { serviceContext, ServiceError, type ServiceContext } from '../../access/service/context.js';
import { deleteWorkspace, getOrganization, updateOrganization } from '../../access/service/organizations.js';
import { checkLimitsChange, setOrganizationLimits } from '../../access/service/limits.js';
import { parse, idParam, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { requireInternal } from './auth.js';
import { orgPatch } from './schemas.js';

function asInternal(ctx: Ctx): ServiceContext {
  requireInternal(ctx);
  return serviceContext({ ...ctx.svc, db: ctx.db }, { kind: 'internal' }, ctx.requestId);
}

/** A service refusal in Envelope B. */
async function mapped<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    const details = err.field ? { field: err.field } : {};
    if (err.kind === 'invalid') throw new ApiError('invalid_request', err.message, details);
    if (err.kind === 'not_found') throw new ApiError('not_found', `No ${err.message.replace(/^no /, '')}.`);
    if (err.kind === 'conflict') throw new ApiError('conflict', err.message, details);
    throw new ApiError('forbidden', err.message);
  }
}

export function register(router: Router, _svc: BackendServices): void {
  router.patch('/internal/organizations/{organizationId}', async (ctx) => {
    const service = asInternal(ctx);
    const id = idParam(ctx, 'organizationId');
    const patch = parse(orgPatch, ctx.body ?? {});
    const { limits, ...fields } = patch;
    // Per-customer limits (src/access/service/limits.ts) beside the access fields; checked first so a
    // bad limit changes nothing.
    if (limits) await mapped(async () => checkLimitsChange(limits, false));
    const org = Object.keys(fields).length
      ? await mapped(() => updateOrganization(service, id, fields))
      : await mapped(() => getOrganization(service, id));
    const changed = limits ? await mapped(() => setOrganizationLimits(service, id, limits)) : undefined;
    ctx.svc.log.info({ organizationId: id, fields: Object.keys(patch) }, 'organization updated');
    return { data: changed ? { ...org, limits: { overrides: changed.overrides, effective: changed.effective } } : org };
  });

  router.delete('/internal/workspaces/{workspaceId}', async (ctx) => {
    const service = asInternal(ctx);
    const id = idParam(ctx, 'workspaceId');
    return { data: await mapped(() => deleteWorkspace(service, id)) };
  });
}

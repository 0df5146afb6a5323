// Warmup routes of /v2 (docs/decisions.md section 6) and the mailbox checker's internal route
// (docs/decisions.md section 7); the warmup jobs are in jobs.ts.
import { ApiError } from '../../http/errors.js';
import { idParam, parse, queryObject, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { requireInternal } from '../internal/index.js';
import { accountRecord, getAccount, getAccountById } from '../mailbox/index.js';
import { patchSettings, patchSettingsSchema, readSettings } from './settings.js';
import { pauseWarmup, recordVerification, startWarmup } from './lifecycle.js';
import { activityQuerySchema, DEPRECATION_HEADERS, listActivity } from './activity.js';
import { actionBody, verificationSchema } from './schemas.js';

const ACC = '/v2/workspaces/{workspaceId}/accounts/{accountId}';

function noBody(body: unknown) {
  // These actions take no fields; an object with fields is refused like any unknown field.
  if (body !== undefined && body !== null) parse(actionBody, body);
}

export function register(router: Router, svc: BackendServices): void {
  // Fail at start, naming the field, when the band table is invalid.
  svc.bands();

  router.get(`${ACC}/warmup/settings`, async (ctx) => ({
    data: await readSettings(ctx.svc, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId')),
  }));

  router.patch(`${ACC}/warmup/settings`, async (ctx) => {
    const body = parse(patchSettingsSchema, ctx.body ?? {});
    return { data: await patchSettings(ctx.svc, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'), body) };
  });

  router.post(`${ACC}/warmup/enable`, async (ctx) => {
    noBody(ctx.body);
    return {
      data: accountRecord(
        ctx.svc,
        await startWarmup(ctx.svc, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'), 'enable'),
      ),
    };
  });

  router.post(`${ACC}/warmup/resume`, async (ctx) => {
    noBody(ctx.body);
    return {
      data: accountRecord(
        ctx.svc,
        await startWarmup(ctx.svc, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'), 'resume'),
      ),
    };
  });

  router.post(`${ACC}/warmup/pause`, async (ctx) => {
    noBody(ctx.body);
    return {
      data: accountRecord(ctx.svc, await pauseWarmup(ctx.svc, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'))),
    };
  });

  router.get(`${ACC}/warmup/activity`, async (ctx) => {
    const query = parse(activityQuerySchema, queryObject(ctx.query));
    const acc = await getAccount(ctx.db, idParam(ctx, 'workspaceId'), idParam(ctx, 'accountId'));
    const out = await listActivity(ctx.db, acc.id, acc.provider, query.page, query.per_page);
    return { ...out, headers: { ...DEPRECATION_HEADERS } };
  });

  // The mailbox checker reports the send-and-receive check (docs/decisions.md section 7).
  router.post('/internal/accounts/{accountId}/verification', async (ctx) => {
    requireInternal(ctx);
    const body = parse(verificationSchema, ctx.body);
    const id = idParam(ctx, 'accountId');
    const verification = await recordVerification(ctx.svc, id, body.result);
    if (!verification) throw new ApiError('not_found', `No account ${id}.`, { accountId: id });
    const row = await getAccountById(ctx.db, id);
    return { data: { ...accountRecord(ctx.svc, row!), autoStart: verification.autoStart } };
  });
}

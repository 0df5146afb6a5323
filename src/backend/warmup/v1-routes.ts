// /v1 warmup: settings (GET and PATCH with every rule of the spec's table), today's activity,
// start, stop and bulk start/stop.
import type { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import * as lifecycle from './lifecycle.js';
import { planOf } from '../../config/plans.js';
import type { Queryable, Row } from '../../db/types.js';
import { parse, type Router, type Ctx, type Reply } from '../router.js';
import type { BackendServices } from '../services.js';
import {
  accountIdParam,
  loadAccount,
  notFound,
  orgOf,
  scoresOf,
  settle,
  warmupStatusOf,
  emptyBody,
} from '../mailbox/index.js';
import { DAYS, addDays, localParts, zonedToUtc } from '../time.js';
import { dailyLimitOf, planAhead, replanDays, shiftPendingSends, windowsOf } from './schedule.js';
import { bulkWarmupBody, patchBody } from './v1-schemas.js';
import {
  accountWithV1Settings,
  cancelPendingSends,
  lockAccountWithFloor,
  updateAccountColumns,
  updateV1Settings,
  upsertTimeSlot,
  v1StrategyOf,
  warmupCounts,
} from './queries.js';

/** v2's fixed warmupMinLimit: accounts.warmup_max_limit and warmup_current_limit never go below it. */
const V2_FLOOR = 5;
const DEFAULT_CONTENT = { industry: 'general', topics: [] as string[] };

async function settingsRow(db: Queryable, orgId: number, id: number): Promise<Row> {
  const account = await accountWithV1Settings(db, orgId, id);
  if (!account) throw notFound(id);
  return account;
}

/** The GET (and PATCH) response; a missing v1_warmup_settings row means the defaults. */
async function settingsView(svc: BackendServices, db: Queryable, account: Row) {
  const windows = (await windowsOf(db, [account.id])).get(account.id)!;
  const maxSendingLimit =
    account.max_below_floor != null && account.warmup_max_limit === V2_FLOOR
      ? account.max_below_floor
      : account.warmup_max_limit;
  const daily = dailyLimitOf(account);
  return {
    emailAccountId: account.id,
    strategy: account.strategy ?? 'progressive',
    timeZone: account.time_zone,
    warmupStatus: warmupStatusOf(account),
    warmupLanguage: account.language ?? 'English',
    upcomingContentConfig:
      account.content_industry != null
        ? { industry: account.content_industry, topics: account.content_topics ?? [] }
        : DEFAULT_CONTENT,
    googleVolumePercentage: account.google_volume ?? 40,
    microsoftVolumePercentage: account.microsoft_volume ?? 40,
    othersVolumePercentage: account.others_volume ?? 20,
    maxSendingLimit,
    warmUpInitialSendingLimit: account.initial_limit ?? 5,
    increaseEmailsByNumber: account.increase_by ?? 2,
    // A custom rate, else (automatic mode) the top of the band of the current daily limit, as on /v2.
    replyRate: account.reply_rate_custom ?? svc.bands().forLimit(account.warmup_current_limit).replyRate.max,
    dailySendingLimit: daily,
    // The warmup pool pairs every send with a receive, so a mailbox receives as many as it sends.
    dailyReceivingLimit: daily,
    timeSlots: windows.map((timeWindow, index) => ({
      day: DAYS[index],
      fromHour: Math.floor(timeWindow.from / 60),
      fromMinute: timeWindow.from % 60,
      toHour: Math.floor(timeWindow.to / 60),
      toMinute: timeWindow.to % 60,
    })),
  };
}

/** Today's activity in the mailbox's local day (warmup status and warmup activity). */
export async function warmupStatusView(db: Queryable, account: Row, now: number) {
  const date = localParts(now, account.time_zone).date;
  const start = zonedToUtc(date, 0, account.time_zone);
  const end = Math.min(zonedToUtc(addDays(date, 1), 0, account.time_zone), now + 1);
  const counts = await warmupCounts(db, account.id, new Date(start), new Date(end));
  const v1Settings = await v1StrategyOf(db, account.id);
  const scores = (await scoresOf(db, [account], now)).get(account.id)!;
  return {
    emailAccountId: account.id,
    date,
    current: warmupStatusOf(account),
    strategy: v1Settings?.strategy ?? 'progressive',
    dailySendingLimit: dailyLimitOf({ ...account, max_below_floor: v1Settings?.max_below_floor ?? null }),
    sent: counts.sent,
    // received: warmup sends that reached a recipient mailbox (inbox or spam); undelivered: bounced.
    received: counts.inbox + counts.spam,
    replied: counts.replied,
    spam: counts.spam,
    undelivered: counts.bounced,
    warmupScore: scores.warmupScore,
    outreachReadinessStatus: scores.outreachReadinessStatus,
    workspaceId: account.provider_workspace_id == null ? null : String(account.provider_workspace_id),
  };
}

/** v2's warmup errors in /v1 terms: the v1 table has no mailbox-check or capacity codes, so `reason` names them. */
function v1ErrorOf(err: ApiError, id: number): ApiError {
  switch (err.code) {
    case 'mailbox_verification_pending':
      return new ApiError('conflict', err.message, { reason: 'mailbox_verification_pending' });
    case 'mailbox_verification_failed':
      return new ApiError('unprocessable_entity', err.message, { reason: 'mailbox_verification_failed' });
    case 'warming_capacity_reached':
      return new ApiError('forbidden', err.message, {
        reason: 'warming_capacity_reached',
        warmingMailboxCap: err.details.warmingMailboxCap,
      });
    case 'not_found':
      return notFound(id);
    case 'conflict':
      return new ApiError('unprocessable_entity', err.message, {
        reason: 'account_not_connected',
        status: err.details.status,
      });
    default:
      return new ApiError('conflict', err.message, err.details);
  }
}

/**
 * Start warmup through the warmup domain's own enable (the same rules as /v2: a pending
 * send-and-receive check is remembered and starts by itself when it passes, a failed one refuses,
 * the plan's warming-mailbox cap holds), then plan the pending sends.
 */
export async function startWarmup(svc: BackendServices, orgId: number, id: number): Promise<Row> {
  const accountRow = await loadAccount(svc.db, orgId, id);
  try {
    await lifecycle.startWarmup(svc, accountRow.workspace_id, id, 'enable');
  } catch (err) {
    throw err instanceof ApiError ? v1ErrorOf(err, id) : err;
  }
  return svc.db.tx(async (tx) => {
    const account = await lockAccountWithFloor(tx, id);
    if (account?.status === 'warming') await planAhead(tx, account, svc.clock.now());
    return account!;
  });
}

/** Stop warmup (v2's pause): a warming mailbox is paused, a remembered start withdrawn; idempotent. Pending sends are cancelled. */
export async function stopWarmup(svc: BackendServices, orgId: number, id: number): Promise<Row> {
  const account = await loadAccount(svc.db, orgId, id);
  try {
    await lifecycle.pauseWarmup(svc, account.workspace_id, id);
  } catch (err) {
    // Stopping a mailbox that is not warming changes nothing.
    if (!(err instanceof ApiError)) throw err;
    if (err.code !== 'conflict') throw v1ErrorOf(err, id);
  }
  await cancelPendingSends(svc.db, [id]);
  return loadAccount(svc.db, orgId, id);
}

function entitlementsOf(ctx: Ctx): string[] {
  return planOf(ctx.svc.plans(), ctx.identity?.plan ?? null).plan.entitlements;
}

async function readWarmupSettings(ctx: Ctx): Promise<Reply> {
  await settle(ctx.db, ctx.svc.clock.now(), accountIdParam(ctx));
  const account = await settingsRow(ctx.db, orgOf(ctx), accountIdParam(ctx));
  return { data: await settingsView(ctx.svc, ctx.db, account) };
}

type PatchBody = z.infer<typeof patchBody>;

/** Entitlements and the plan's per-mailbox cap: checked before anything is written. */
function refuseBeyondPlan(ctx: Ctx, body: PatchBody): void {
  const ent = entitlementsOf(ctx);
  if (body.warmupLanguage !== undefined && !ent.includes('warmup_language')) {
    throw new ApiError(
      'entitlement_required',
      'warmupLanguage needs the warmup-language entitlement of a higher plan.',
      { field: 'warmupLanguage', entitlement: 'warmup_language' },
    );
  }
  if (body.upcomingContentConfig !== undefined && !ent.includes('content_settings')) {
    throw new ApiError(
      'entitlement_required',
      'upcomingContentConfig needs the content-setting entitlement of a higher plan.',
      { field: 'upcomingContentConfig', entitlement: 'content_settings' },
    );
  }
  // maxSendingLimit is the shared warmup_max_limit, so the plan's per-mailbox cap holds as on /v2.
  const cap = planOf(ctx.svc.plans(), ctx.identity?.plan ?? null).plan.maxWarmupPerAccount;
  if (body.maxSendingLimit !== undefined && cap !== null && body.maxSendingLimit > cap) {
    throw new ApiError('invalid_request', `maxSendingLimit: must be at most ${cap}, the plan's per-mailbox cap`, {
      field: 'maxSendingLimit',
      maxWarmupPerAccount: cap,
    });
  }
}

/** The columns of accounts a PATCH changes, shared with /v2. */
// v2 keeps warmup_max_limit >= 5 (CHECK, warmupMinLimit fixed at 5) while v1 accepts 0..100: a v1 max
// of 0..4 sets the shared column to the floor of 5 and is kept in v1_warmup_settings.max_below_floor,
// which caps the daily limit in force (see dailyLimitOf). A v1 change applies at once and replaces a
// lowered max still waiting for local midnight.
export function sharedColumnsOf(body: PatchBody, currentLimit: number): Record<string, unknown> {
  const accountColumns: Record<string, unknown> = {};
  if (body.maxSendingLimit !== undefined) {
    const shared = Math.max(V2_FLOOR, body.maxSendingLimit);
    accountColumns.warmup_max_limit = shared;
    accountColumns.warmup_current_limit = Math.max(V2_FLOOR, Math.min(currentLimit, shared));
    accountColumns.pending_max_limit = null;
    accountColumns.pending_effective_at = null;
  }
  if (body.replyRate !== undefined) accountColumns.reply_rate_custom = body.replyRate;
  if (body.timeZone !== undefined) accountColumns.time_zone = body.timeZone;
  return accountColumns;
}

/** The columns of v1_warmup_settings (the /v1-only settings) a PATCH changes. */
export function v1ColumnsOf(body: PatchBody): Record<string, unknown> {
  const v1Columns: Record<string, unknown> = {};
  if (body.strategy !== undefined) v1Columns.strategy = body.strategy;
  if (body.maxSendingLimit !== undefined)
    v1Columns.max_below_floor = body.maxSendingLimit < V2_FLOOR ? body.maxSendingLimit : null;
  if (body.warmUpInitialSendingLimit !== undefined) v1Columns.initial_limit = body.warmUpInitialSendingLimit;
  if (body.increaseEmailsByNumber !== undefined) v1Columns.increase_by = body.increaseEmailsByNumber;
  if (body.warmupLanguage !== undefined) v1Columns.language = body.warmupLanguage;
  if (body.upcomingContentConfig !== undefined) {
    v1Columns.content_industry = body.upcomingContentConfig.industry;
    v1Columns.content_topics = body.upcomingContentConfig.topics;
  }
  if (body.googleVolume !== undefined) {
    v1Columns.google_volume = body.googleVolume;
    v1Columns.microsoft_volume = body.microsoftVolume;
    v1Columns.others_volume = body.othersVolume;
  }
  return v1Columns;
}

// The spec does not show the PATCH response: it is the updated settings, as GET returns them.
// Validation (every rule of the table), entitlements and the plan cap all pass before anything is written.
async function patchWarmupSettings(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const id = accountIdParam(ctx);
  const body = parse(patchBody, ctx.body ?? {});
  refuseBeyondPlan(ctx, body);
  const now = ctx.svc.clock.now();
  await ctx.db.tx(async (tx) => {
    const account = await loadAccount(tx, org, id, true);
    await updateAccountColumns(tx, id, sharedColumnsOf(body, account.warmup_current_limit));
    await updateV1Settings(tx, id, v1ColumnsOf(body));

    // Windows: only the days sent change; the others keep theirs.
    for (const slot of body.timeSlots ?? []) {
      await upsertTimeSlot(
        tx,
        id,
        DAYS.indexOf(slot.day),
        slot.fromHour * 60 + slot.fromMinute,
        slot.toHour * 60 + slot.toMinute,
      );
    }
    // A new zone keeps every pending send at its local wall-clock time, read in the new zone.
    if (body.timeZone !== undefined && body.timeZone !== account.time_zone)
      await shiftPendingSends(tx, id, body.timeZone, now);
    if (body.timeSlots) {
      const fresh = await settingsRow(tx, org, id);
      await replanDays(
        tx,
        fresh,
        body.timeSlots.map((s) => DAYS.indexOf(s.day)),
        now,
      );
    }
  });
  ctx.svc.log.info(
    { organizationId: org, emailAccountId: id, fields: Object.keys(body) },
    'v1 warmup settings updated',
  );
  return { data: await settingsView(ctx.svc, ctx.db, await settingsRow(ctx.db, org, id)) };
}

async function startWarmupRoute(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  if (ctx.body !== undefined) parse(emptyBody, ctx.body);
  const account = await startWarmup(ctx.svc, org, accountIdParam(ctx));
  return { data: await warmupStatusView(ctx.db, account, ctx.svc.clock.now()) };
}

async function stopWarmupRoute(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  if (ctx.body !== undefined) parse(emptyBody, ctx.body);
  const account = await stopWarmup(ctx.svc, org, accountIdParam(ctx));
  return { data: await warmupStatusView(ctx.db, account, ctx.svc.clock.now()) };
}

// Each account is its own transaction: results say per account what happened, in input order.
async function bulkWarmup(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const body = parse(bulkWarmupBody, ctx.body ?? {});
  const results = [];
  for (const id of body.emailAccountIds) {
    try {
      const account =
        body.action === 'start' ? await startWarmup(ctx.svc, org, id) : await stopWarmup(ctx.svc, org, id);
      results.push({ emailAccountId: id, success: true, warmupStatus: warmupStatusOf(account) });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      results.push({
        emailAccountId: id,
        success: false,
        errorCode: err.code,
        message: err.message,
        ...(err.details.reason ? { reason: err.details.reason } : {}),
      });
    }
  }
  return { data: { action: body.action, results } };
}

export function register(router: Router): void {
  router.get('/v1/warmup-settings/{emailAccountId}', readWarmupSettings);
  router.patch('/v1/warmup-settings/{emailAccountId}', patchWarmupSettings);

  const status = async (ctx: Ctx) => {
    await settle(ctx.db, ctx.svc.clock.now(), accountIdParam(ctx));
    const account = await loadAccount(ctx.db, orgOf(ctx), accountIdParam(ctx));
    return { data: await warmupStatusView(ctx.db, account, ctx.svc.clock.now()) };
  };
  // The spec's Get Warmup Status and Warmup Activity History are the same route and response.
  router.get('/v1/warmup-status/{emailAccountId}', status);
  router.get('/v1/warmup-activity/{emailAccountId}', status);
  router.post('/v1/warmup/{emailAccountId}/start', startWarmupRoute);
  router.post('/v1/warmup/{emailAccountId}/stop', stopWarmupRoute);
  router.post('/v1/warmup/bulk', bulkWarmup);
}

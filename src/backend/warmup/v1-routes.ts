// /v1 warmup: settings (GET and PATCH with every rule of the spec's table), today's activity,
// start, stop and bulk start/stop.
import { ApiError } from '../../http/errors.js';
import * as lifecycle from './lifecycle.js';
import { bandsFrom } from './bands.js';
import { planOf } from '../../config/plans.js';
import type { Queryable, Row } from '../../db/types.js';
import { parse, type Router, type Ctx } from '../router.js';
import type { BackendServices } from '../services.js';
import { ORG_ACCOUNTS, accountIdParam, loadAccount, notFound, orgOf, scoresOf, settle, warmupStatusOf } from '../accounts/index.js';
import { DAYS, addDays, localParts, zonedToUtc } from '../time.js';
import { cancelPendingSends, dailyLimitOf, planAhead, replanDays, shiftPendingSends, windowsOf } from './schedule.js';
import { bulkWarmupBody, emptyBody, patchBody } from '../v1/schemas.js';

/** v2's fixed warmupMinLimit: accounts.warmup_max_limit and warmup_current_limit never go below it. */
const V2_FLOOR = 5;
const DEFAULT_CONTENT = { industry: 'general', topics: [] as string[] };

async function settingsRow(q: Queryable, orgId: number, id: number): Promise<Row> {
  const rows = await q.query(
    `SELECT a.*, s.strategy, s.max_below_floor, s.initial_limit, s.increase_by, s.language, s.content_industry, s.content_topics,
            s.google_volume, s.microsoft_volume, s.others_volume
       FROM ${ORG_ACCOUNTS} LEFT JOIN v1_warmup_settings s ON s.account_id = a.id WHERE a.id = $2`,
    [orgId, id],
  );
  if (!rows.length) throw notFound(id);
  return rows[0];
}

/** The GET (and PATCH) response; a missing v1_warmup_settings row means the defaults. */
async function settingsView(svc: BackendServices, q: Queryable, a: Row) {
  const windows = (await windowsOf(q, [a.id])).get(a.id)!;
  const maxSendingLimit = a.max_below_floor != null && a.warmup_max_limit === V2_FLOOR ? a.max_below_floor : a.warmup_max_limit;
  const daily = dailyLimitOf(a);
  return {
    emailAccountId: a.id,
    strategy: a.strategy ?? 'progressive',
    timeZone: a.time_zone,
    warmupStatus: warmupStatusOf(a),
    warmupLanguage: a.language ?? 'English',
    upcomingContentConfig: a.content_industry != null ? { industry: a.content_industry, topics: a.content_topics ?? [] } : DEFAULT_CONTENT,
    googleVolumePercentage: a.google_volume ?? 40,
    microsoftVolumePercentage: a.microsoft_volume ?? 40,
    othersVolumePercentage: a.others_volume ?? 20,
    maxSendingLimit,
    warmUpInitialSendingLimit: a.initial_limit ?? 5,
    increaseEmailsByNumber: a.increase_by ?? 2,
    // A custom rate, else (automatic mode) the top of the band of the current daily limit, as on /v2.
    replyRate: a.reply_rate_custom ?? bandsFrom(svc.config.warmupBandsFile).forLimit(a.warmup_current_limit).replyRate.max,
    dailySendingLimit: daily,
    // The warmup pool pairs every send with a receive, so a mailbox receives as many as it sends.
    dailyReceivingLimit: daily,
    timeSlots: windows.map((w, i) => ({
      day: DAYS[i],
      fromHour: Math.floor(w.from / 60),
      fromMinute: w.from % 60,
      toHour: Math.floor(w.to / 60),
      toMinute: w.to % 60,
    })),
  };
}

/** Today's activity in the mailbox's local day (warmup status and warmup activity). */
export async function warmupStatusView(q: Queryable, a: Row, now: number) {
  const date = localParts(now, a.time_zone).date;
  const start = zonedToUtc(date, 0, a.time_zone);
  const end = Math.min(zonedToUtc(addDays(date, 1), 0, a.time_zone), now + 1);
  const [c] = await q.query(
    `SELECT count(*)::int AS sent,
            count(*) FILTER (WHERE outcome = 'inbox')::int AS inbox,
            count(*) FILTER (WHERE outcome = 'spam')::int AS spam,
            count(*) FILTER (WHERE outcome = 'bounced')::int AS bounced,
            count(*) FILTER (WHERE replied)::int AS replied
       FROM warmup_messages WHERE account_id = $1 AND sent_at >= $2 AND sent_at < $3`,
    [a.id, new Date(start), new Date(end)],
  );
  const s = (await q.query(`SELECT strategy, max_below_floor FROM v1_warmup_settings WHERE account_id = $1`, [a.id]))[0];
  const scores = (await scoresOf(q, [a], now)).get(a.id)!;
  return {
    emailAccountId: a.id,
    date,
    current: warmupStatusOf(a),
    strategy: s?.strategy ?? 'progressive',
    dailySendingLimit: dailyLimitOf({ ...a, max_below_floor: s?.max_below_floor ?? null }),
    sent: c.sent,
    // received: warmup sends that reached a recipient mailbox (inbox or spam); undelivered: bounced.
    received: c.inbox + c.spam,
    replied: c.replied,
    spam: c.spam,
    undelivered: c.bounced,
    warmupScore: scores.warmupScore,
    outreachReadinessStatus: scores.outreachReadinessStatus,
    workspaceId: a.provider_workspace_id == null ? null : String(a.provider_workspace_id),
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
      return new ApiError('forbidden', err.message, { reason: 'warming_capacity_reached', warmingMailboxCap: err.details.warmingMailboxCap });
    case 'not_found':
      return notFound(id);
    case 'conflict':
      return new ApiError('unprocessable_entity', err.message, { reason: 'account_not_connected', status: err.details.status });
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
  const a = await loadAccount(svc.db, orgId, id);
  try {
    await lifecycle.startWarmup(svc, a.workspace_id, id, 'enable');
  } catch (err) {
    throw err instanceof ApiError ? v1ErrorOf(err, id) : err;
  }
  return svc.db.tx(async (q) => {
    const rows = await q.query(
      `SELECT a.*, s.max_below_floor FROM accounts a LEFT JOIN v1_warmup_settings s ON s.account_id = a.id WHERE a.id = $1 FOR UPDATE OF a`,
      [id],
    );
    if (rows[0]?.status === 'warming') await planAhead(q, rows[0], svc.clock.now());
    return rows[0];
  });
}

/** Stop warmup (v2's pause): a warming mailbox is paused, a remembered start withdrawn; idempotent. Pending sends are cancelled. */
export async function stopWarmup(svc: BackendServices, orgId: number, id: number): Promise<Row> {
  const a = await loadAccount(svc.db, orgId, id);
  try {
    await lifecycle.pauseWarmup(svc, a.workspace_id, id);
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

export function register(router: Router): void {
  router.get('/v1/warmup-settings/{emailAccountId}', async (ctx) => {
    await settle(ctx.db, ctx.svc.clock.now(), accountIdParam(ctx));
    const a = await settingsRow(ctx.db, orgOf(ctx), accountIdParam(ctx));
    return { data: await settingsView(ctx.svc, ctx.db, a) };
  });

  // The spec does not show the PATCH response: it is the updated settings, as GET returns them.
  // Validation (every rule of the table), entitlements and the plan cap all pass before anything is written.
  router.patch('/v1/warmup-settings/{emailAccountId}', async (ctx) => {
    const org = orgOf(ctx);
    const id = accountIdParam(ctx);
    const b = parse(patchBody, ctx.body ?? {});
    const ent = entitlementsOf(ctx);
    if (b.warmupLanguage !== undefined && !ent.includes('warmup_language')) {
      throw new ApiError('entitlement_required', 'warmupLanguage needs the warmup-language entitlement of a higher plan.', { field: 'warmupLanguage', entitlement: 'warmup_language' });
    }
    if (b.upcomingContentConfig !== undefined && !ent.includes('content_settings')) {
      throw new ApiError('entitlement_required', 'upcomingContentConfig needs the content-setting entitlement of a higher plan.', { field: 'upcomingContentConfig', entitlement: 'content_settings' });
    }
    // maxSendingLimit is the shared warmup_max_limit, so the plan's per-mailbox cap holds as on /v2.
    const cap = planOf(ctx.svc.plans(), ctx.identity?.plan ?? null).plan.maxWarmupPerAccount;
    if (b.maxSendingLimit !== undefined && cap !== null && b.maxSendingLimit > cap) {
      throw new ApiError('invalid_request', `maxSendingLimit: must be at most ${cap}, the plan's per-mailbox cap`, { field: 'maxSendingLimit', maxWarmupPerAccount: cap });
    }
    const now = ctx.svc.clock.now();
    await ctx.db.tx(async (q) => {
      const a = await loadAccount(q, org, id, true);
      // Shared columns. v2 keeps warmup_max_limit >= 5 (CHECK, warmupMinLimit fixed at 5) while v1
      // accepts 0..100: a v1 max of 0..4 sets the shared column to the floor of 5 and is kept in
      // v1_warmup_settings.max_below_floor, which caps the daily limit in force (see dailyLimitOf).
      // A v1 change applies at once and replaces a lowered max still waiting for local midnight.
      const set: string[] = [];
      const params: unknown[] = [id];
      const add = (col: string, v: unknown) => {
        params.push(v);
        set.push(`${col} = $${params.length}`);
      };
      if (b.maxSendingLimit !== undefined) {
        const shared = Math.max(V2_FLOOR, b.maxSendingLimit);
        add('warmup_max_limit', shared);
        add('warmup_current_limit', Math.max(V2_FLOOR, Math.min(a.warmup_current_limit, shared)));
        set.push('pending_max_limit = NULL', 'pending_effective_at = NULL');
      }
      if (b.replyRate !== undefined) add('reply_rate_custom', b.replyRate);
      if (b.timeZone !== undefined) add('time_zone', b.timeZone);
      if (set.length) await q.query(`UPDATE accounts SET ${set.join(', ')}, updated_at = now() WHERE id = $1`, params);

      // v1-only columns.
      const v1: string[] = [];
      const p1: unknown[] = [id];
      const add1 = (col: string, v: unknown) => {
        p1.push(v);
        v1.push(`${col} = $${p1.length}`);
      };
      if (b.strategy !== undefined) add1('strategy', b.strategy);
      if (b.maxSendingLimit !== undefined) add1('max_below_floor', b.maxSendingLimit < V2_FLOOR ? b.maxSendingLimit : null);
      if (b.warmUpInitialSendingLimit !== undefined) add1('initial_limit', b.warmUpInitialSendingLimit);
      if (b.increaseEmailsByNumber !== undefined) add1('increase_by', b.increaseEmailsByNumber);
      if (b.warmupLanguage !== undefined) add1('language', b.warmupLanguage);
      if (b.upcomingContentConfig !== undefined) {
        add1('content_industry', b.upcomingContentConfig.industry);
        add1('content_topics', b.upcomingContentConfig.topics);
      }
      if (b.googleVolume !== undefined) {
        add1('google_volume', b.googleVolume);
        add1('microsoft_volume', b.microsoftVolume);
        add1('others_volume', b.othersVolume);
      }
      if (v1.length) {
        await q.query(`INSERT INTO v1_warmup_settings (account_id) VALUES ($1) ON CONFLICT (account_id) DO NOTHING`, [id]);
        await q.query(`UPDATE v1_warmup_settings SET ${v1.join(', ')}, updated_at = now() WHERE account_id = $1`, p1);
      }

      // Windows: only the days sent change; the others keep theirs.
      if (b.timeSlots) {
        for (const s of b.timeSlots) {
          await q.query(
            `INSERT INTO v1_time_slots (account_id, day, from_minute, to_minute) VALUES ($1, $2, $3, $4)
             ON CONFLICT (account_id, day) DO UPDATE SET from_minute = $3, to_minute = $4`,
            [id, DAYS.indexOf(s.day), s.fromHour * 60 + s.fromMinute, s.toHour * 60 + s.toMinute],
          );
        }
      }
      // A new zone keeps every pending send at its local wall-clock time, read in the new zone.
      if (b.timeZone !== undefined && b.timeZone !== a.time_zone) await shiftPendingSends(q, id, b.timeZone, now);
      if (b.timeSlots) {
        const fresh = await settingsRow(q, org, id);
        await replanDays(q, fresh, b.timeSlots.map((s) => DAYS.indexOf(s.day)), now);
      }
    });
    ctx.svc.log.info({ organizationId: org, emailAccountId: id, fields: Object.keys(b) }, 'v1 warmup settings updated');
    return { data: await settingsView(ctx.svc, ctx.db, await settingsRow(ctx.db, org, id)) };
  });

  const status = async (ctx: Ctx) => {
    await settle(ctx.db, ctx.svc.clock.now(), accountIdParam(ctx));
    const a = await loadAccount(ctx.db, orgOf(ctx), accountIdParam(ctx));
    return { data: await warmupStatusView(ctx.db, a, ctx.svc.clock.now()) };
  };
  // The spec's Get Warmup Status and Warmup Activity History are the same route and response.
  router.get('/v1/warmup-status/{emailAccountId}', status);
  router.get('/v1/warmup-activity/{emailAccountId}', status);

  router.post('/v1/warmup/{emailAccountId}/start', async (ctx) => {
    const org = orgOf(ctx);
    if (ctx.body !== undefined) parse(emptyBody, ctx.body);
    const a = await startWarmup(ctx.svc, org, accountIdParam(ctx));
    return { data: await warmupStatusView(ctx.db, a, ctx.svc.clock.now()) };
  });

  router.post('/v1/warmup/{emailAccountId}/stop', async (ctx) => {
    const org = orgOf(ctx);
    if (ctx.body !== undefined) parse(emptyBody, ctx.body);
    const a = await stopWarmup(ctx.svc, org, accountIdParam(ctx));
    return { data: await warmupStatusView(ctx.db, a, ctx.svc.clock.now()) };
  });

  // Each account is its own transaction: results say per account what happened, in input order.
  router.post('/v1/warmup/bulk', async (ctx) => {
    const org = orgOf(ctx);
    const body = parse(bulkWarmupBody, ctx.body ?? {});
    const results = [];
    for (const id of body.emailAccountIds) {
      try {
        const a = body.action === 'start' ? await startWarmup(ctx.svc, org, id) : await stopWarmup(ctx.svc, org, id);
        results.push({ emailAccountId: id, success: true, warmupStatus: warmupStatusOf(a) });
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        results.push({ emailAccountId: id, success: false, errorCode: err.code, message: err.message, ...(err.details.reason ? { reason: err.details.reason } : {}) });
      }
    }
    return { data: { action: body.action, results } };
  });
}

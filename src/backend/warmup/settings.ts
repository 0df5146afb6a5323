// Warmup settings of one mailbox (spec, "Warmup settings"): the read view and the PATCH rules.
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import type { Row } from '../../db/index.js';
import type { BackendServices } from '../services.js';
import { getAccount, replyRateView, settleDueLimits, WARMUP_MIN_LIMIT } from '../mailbox/index.js';
import { orgOfWorkspace } from './org.js';
import { nextLocalMidnight, storeSettings } from './queries.js';
import { pgInt } from '../../db/storable.js';
import { isoOrNull } from '../../db/time.js';

/** The GET view. `warmupLevel` no longer exists and is never returned (spec, rule 4). */
export function settingsView(svc: BackendServices, row: Row, maxWarmupPerAccount: number | null) {
  const rr = replyRateView(svc, row);
  return {
    accountId: row.id,
    status: row.status,
    warmupMaxLimit: row.warmup_max_limit,
    warmupCurrentLimit: row.warmup_current_limit,
    warmupMinLimit: WARMUP_MIN_LIMIT,
    maxWarmupPerAccount,
    // A lowered max waits for the mailbox's next local midnight; until then warmupMaxLimit is in force.
    pendingWarmupMaxLimit: row.pending_max_limit ?? null,
    pendingEffectiveAt: isoOrNull(row.pending_effective_at),
    replyRateMode: rr.replyRateMode,
    replyRateCustom: rr.replyRateCustom,
    replyRate: rr.replyRate,
    replyRateMin: rr.replyRateMin,
    replyRateMax: rr.replyRateMax,
    threadTendencyMin: rr.threadTendencyMin,
    threadTendencyMax: rr.threadTendencyMax,
    timeZone: row.time_zone,
  };
}

/**
 * Strict: an unknown field (warmupLevel included) is 400 invalid_request. `replyRateMode` LEVEL
 * switches back to the automatic band; a `replyRate` number sets a custom value (mode CUSTOM).
 */
export const patchSettingsSchema = z
  .object({
    // No upper bound of its own when the plan has no cap (spec), but the column is an integer.
    warmupMaxLimit: pgInt(WARMUP_MIN_LIMIT),
    replyRateMode: z.enum(['LEVEL', 'CUSTOM']),
    replyRate: z.number().min(0).max(100),
  })
  .partial()
  .strict()
  .superRefine((body, ctx) => {
    if (Object.keys(body).length === 0)
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'send at least one of warmupMaxLimit, replyRateMode, replyRate',
      });
    if (body.replyRateMode === 'LEVEL' && body.replyRate !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['replyRate'],
        message: 'a custom replyRate cannot be sent with replyRateMode LEVEL',
      });
    }
  });
export type PatchSettings = z.infer<typeof patchSettingsSchema>;

export async function readSettings(svc: BackendServices, workspaceId: number, accountId: number) {
  await settleDueLimits(svc.db, new Date(svc.clock.now()), { accountId });
  const org = await orgOfWorkspace(svc, svc.db, workspaceId);
  const row = await getAccount(svc.db, workspaceId, accountId);
  return settingsView(svc, row, org.plan.maxWarmupPerAccount);
}

export async function patchSettings(svc: BackendServices, workspaceId: number, accountId: number, body: PatchSettings) {
  const now = new Date(svc.clock.now());
  return svc.db.tx(async (tx) => {
    // FOR SHARE on the organization: a concurrent plan change (which lowers maxima) waits for us, or we for it.
    const org = await orgOfWorkspace(svc, tx, workspaceId, 'share');
    const cap = org.plan.maxWarmupPerAccount;
    let acc = await getAccount(tx, workspaceId, accountId, true);
    if (body.warmupMaxLimit !== undefined && cap !== null && body.warmupMaxLimit > cap) {
      throw new ApiError('invalid_request', `warmupMaxLimit: must be at most ${cap}, the plan's maxWarmupPerAccount`, {
        field: 'warmupMaxLimit',
        maxWarmupPerAccount: cap,
        plan: org.planId,
        issues: [{ field: 'warmupMaxLimit', message: `must be at most maxWarmupPerAccount (${cap})` }],
      });
    }
    if (body.replyRateMode === 'CUSTOM' && body.replyRate === undefined && acc.reply_rate_custom === null) {
      throw new ApiError('invalid_request', 'replyRate: required to switch replyRateMode to CUSTOM', {
        field: 'replyRate',
        issues: [{ field: 'replyRate', message: 'required with replyRateMode CUSTOM' }],
      });
    }
    if ((await settleDueLimits(tx, now, { accountId })).length)
      acc = await getAccount(tx, workspaceId, accountId, true);

    let max: number = acc.warmup_max_limit;
    let pending: number | null = acc.pending_max_limit;
    let pendingAt: Date | null = acc.pending_effective_at;
    if (body.warmupMaxLimit !== undefined) {
      const maxLimit = body.warmupMaxLimit;
      if (maxLimit < max) {
        // Lowered: takes effect at the mailbox's next local midnight (spec, States).
        pending = maxLimit;
        pendingAt = await nextLocalMidnight(tx, now, acc.time_zone);
      } else {
        // Raised (or unchanged): applies at once and cancels any pending lower value.
        max = maxLimit;
        pending = null;
        pendingAt = null;
      }
    }
    let custom: number | null = acc.reply_rate_custom;
    if (body.replyRateMode === 'LEVEL') custom = null;
    if (body.replyRate !== undefined) custom = body.replyRate;
    await storeSettings(
      tx,
      accountId,
      { warmupMaxLimit: max, pendingMaxLimit: pending, pendingEffectiveAt: pendingAt, replyRateCustom: custom },
      now,
    );
    const row = await getAccount(tx, workspaceId, accountId);
    return settingsView(svc, row, cap);
  });
}

// The account record of the /v2 interface and the reply-rate rules it and the warmup settings share,
// and reading one account of a workspace (404 otherwise).
import { ApiError } from '../../http/errors.js';
import type { Queryable, Row } from '../../db/types.js';
import type { BackendServices } from '../services.js';
import { accountOfWorkspace } from './queries.js';
import { isoOrNull } from '../../db/time.js';

/** warmupMinLimit: fixed at 5 for every mailbox (spec, Warmup settings). */
export const WARMUP_MIN_LIMIT = 5;

export interface ReplyRateView {
  replyRate: number;
  replyRateMode: 'LEVEL' | 'CUSTOM';
  replyRateCustom: boolean;
  replyRateMin: number;
  replyRateMax: number;
  threadTendencyMin: number;
  threadTendencyMax: number;
}

/**
 * Spec, Warmup settings rules 1-3: in automatic mode the bands follow the current daily limit and
 * `replyRate` is the top of the reply-rate band; a custom reply rate is reported as its fixed value.
 */
export function replyRateView(svc: BackendServices, row: Row): ReplyRateView {
  const band = svc.bands().forLimit(row.warmup_current_limit);
  const custom =
    row.reply_rate_custom === null || row.reply_rate_custom === undefined ? null : Number(row.reply_rate_custom);
  return {
    replyRate: custom ?? band.replyRate.max,
    replyRateMode: custom === null ? 'LEVEL' : 'CUSTOM',
    replyRateCustom: custom !== null,
    replyRateMin: custom ?? band.replyRate.min,
    replyRateMax: custom ?? band.replyRate.max,
    threadTendencyMin: band.threadTendency.min,
    threadTendencyMax: band.threadTendency.max,
  };
}

function connection(value: unknown) {
  if (!value || typeof value !== 'object') return null;
  const { host, port, username, secure } = value as Record<string, unknown>;
  return { host, port, username, secure };
}

/** The v2 account record (list and single read). */
export function accountRecord(svc: BackendServices, row: Row) {
  const rr = replyRateView(svc, row);
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    emailAddress: row.email_address,
    fromName: row.from_name,
    provider: row.provider,
    status: row.status,
    verification: row.verification,
    warmupRequested: row.warmup_requested,
    warmupMaxLimit: row.warmup_max_limit,
    warmupCurrentLimit: row.warmup_current_limit,
    warmupMinLimit: WARMUP_MIN_LIMIT,
    pendingWarmupMaxLimit: row.pending_max_limit ?? null,
    pendingEffectiveAt: isoOrNull(row.pending_effective_at),
    replyRate: rr.replyRate,
    replyRateMode: rr.replyRateMode,
    timeZone: row.time_zone,
    tags: row.tags ?? [],
    smtp: connection(row.smtp),
    imap: connection(row.imap),
    connectionError: row.connection_error ?? null,
    lastConnectedAt: isoOrNull(row.last_connected_at),
    verificationCheckedAt: isoOrNull(row.verification_checked_at),
    warmupStartedAt: isoOrNull(row.warmup_started_at),
    createdAt: isoOrNull(row.created_at),
    updatedAt: isoOrNull(row.updated_at),
  };
}

/** One account of the workspace, or 404 (an account of another workspace is not found). */
export async function getAccount(db: Queryable, workspaceId: number, accountId: number, lock = false): Promise<Row> {
  const row = await accountOfWorkspace(db, workspaceId, accountId, lock);
  if (!row) throw new ApiError('not_found', `No account ${accountId} in this workspace.`, { accountId });
  return row;
}

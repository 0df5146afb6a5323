// Account rows and the account record of the /v2 interface. Passwords are stripped in SQL
// (`smtp - 'password'`), so no read path ever holds them.
import { ApiError } from '../../http/errors.js';
import type { Queryable, Row } from '../../db/index.js';
import { bandsFrom } from '../warmup/index.js';
import type { BackendServices } from '../services.js';

/** warmupMinLimit: fixed at 5 for every mailbox (spec, Warmup settings). */
export const WARMUP_MIN_LIMIT = 5;

export { STATUSES } from './schemas.js';

/** The columns of an account read, with its tags; `a` is the accounts alias. */
export const ACCOUNT_COLUMNS = `a.id, a.workspace_id, a.email_address, a.from_name, a.provider, a.status, a.verification,
  a.warmup_requested, a.auto_warmup, a.warmup_max_limit, a.warmup_current_limit, a.pending_max_limit, a.pending_effective_at,
  a.reply_rate_custom, a.time_zone, a.smtp - 'password' AS smtp, a.imap - 'password' AS imap, a.connection_error,
  a.last_connected_at, a.verification_checked_at, a.warmup_started_at, a.created_at, a.updated_at,
  COALESCE((SELECT json_agg(json_build_object('id', t.id, 'name', t.name) ORDER BY t.id)
    FROM account_tags x JOIN tags t ON t.id = x.tag_id WHERE x.account_id = a.id), '[]'::json) AS tags`;

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

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
  const band = bandsFrom(svc.config.warmupBandsFile).forLimit(row.warmup_current_limit);
  const custom = row.reply_rate_custom === null || row.reply_rate_custom === undefined ? null : Number(row.reply_rate_custom);
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
    pendingEffectiveAt: iso(row.pending_effective_at),
    replyRate: rr.replyRate,
    replyRateMode: rr.replyRateMode,
    timeZone: row.time_zone,
    tags: row.tags ?? [],
    smtp: connection(row.smtp),
    imap: connection(row.imap),
    connectionError: row.connection_error ?? null,
    lastConnectedAt: iso(row.last_connected_at),
    verificationCheckedAt: iso(row.verification_checked_at),
    warmupStartedAt: iso(row.warmup_started_at),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

/**
 * A lowered max whose local midnight has passed is in force even if the job has not run yet: reads
 * and writes settle the workspace's due limits first (cheap: a partial index on due rows).
 */
export async function settleDueLimits(db: Queryable, now: Date, where: { workspaceId?: number; accountId?: number } = {}): Promise<number[]> {
  const conds = ['pending_effective_at IS NOT NULL', 'pending_effective_at <= $1'];
  const params: unknown[] = [now];
  if (where.workspaceId !== undefined) conds.push(`workspace_id = $${params.push(where.workspaceId)}`);
  if (where.accountId !== undefined) conds.push(`id = $${params.push(where.accountId)}`);
  const rows = await db.query(
    `UPDATE accounts SET warmup_max_limit = pending_max_limit,
       warmup_current_limit = LEAST(warmup_current_limit, pending_max_limit),
       pending_max_limit = NULL, pending_effective_at = NULL, updated_at = $1
     WHERE ${conds.join(' AND ')} RETURNING id`,
    params,
  );
  return rows.map((r) => r.id as number);
}

/** One account of the workspace, or 404 (an account of another workspace is not found). */
export async function getAccount(db: Queryable, workspaceId: number, accountId: number, lock = false): Promise<Row> {
  const rows = await db.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = $1 AND a.workspace_id = $2 ${lock ? 'FOR UPDATE OF a' : ''}`, [
    accountId,
    workspaceId,
  ]);
  if (!rows.length) throw new ApiError('not_found', `No account ${accountId} in this workspace.`, { accountId });
  return rows[0];
}

/** An account by id alone (internal routes), or null. */
export async function getAccountById(db: Queryable, accountId: number, lock = false): Promise<Row | null> {
  const rows = await db.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = $1 ${lock ? 'FOR UPDATE OF a' : ''}`, [accountId]);
  return rows[0] ?? null;
}

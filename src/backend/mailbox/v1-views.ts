// What every /v1 handler shares (spec v1-partner-api.md; docs/decisions.md section 4): the organization of the
// partner key (a partner key sees every account of its organization's live workspaces, so every query
// is scoped by ctx.identity.organizationId), org-scoped account loading (404 not_found for an account
// that is not the organization's), and the account views of the spec (the account item and the
// account status). GET /v1/rate-limit is answered by the gateway.
import { ApiError } from '../../http/errors.js';
import type { Queryable, Row } from '../../db/types.js';
import { idParam, type Ctx } from '../router.js';
import { daysBetween } from '../time.js';
import { cachedSetupScores, orgAccountRows, settleDueLimits, tagNamesOf, warmupSendCounts } from './queries.js';
import { isoOrNull } from '../../db/time.js';

/** Warmup score window: the inbox rate of the last 14 days of warmup sends. */
export const SCORE_WINDOW_DAYS = 14;
/** Outreach readiness: at least this score over at least this many sends in the window. */
export const READY_SCORE = 85;
export const READY_MIN_SENT = 50;

/** The organization a /v1 request acts for; only partner keys reach /v1 (the gateway checks it). */
export function orgOf(ctx: Ctx): number {
  const id = ctx.identity;
  if (!id || id.keyType !== 'partner') throw new ApiError('forbidden', 'The /v1 interface needs a partner key.');
  return id.organizationId;
}

export function accountIdParam(ctx: Ctx): number {
  return idParam(ctx, 'emailAccountId');
}

export function notFound(id: number): ApiError {
  return new ApiError('not_found', `Email account ${id} not found.`, { emailAccountId: id });
}

/**
 * A lowered max (v2) waiting for the mailbox's local midnight is in force once that has passed, even
 * before the warmup job runs: /v1 reads settle due limits first, as /v2 reads do.
 */
export async function settle(db: Queryable, now: number, accountId?: number): Promise<void> {
  await settleDueLimits(db, new Date(now), accountId === undefined ? {} : { accountId });
}

/** The account row, or 404 not_found when it is not one of the organization's. `lock` takes FOR UPDATE. */
export async function loadAccount(db: Queryable, orgId: number, id: number, lock = false): Promise<Row> {
  const rows = await orgAccountRows(db, orgId, [id], lock);
  if (!rows.length) throw notFound(id);
  return rows[0];
}

/** The subset of `ids` that are the organization's, as a map id -> row. */
export async function loadAccounts(
  db: Queryable,
  orgId: number,
  ids: number[],
  lock = false,
): Promise<Map<number, Row>> {
  const rows = await orgAccountRows(db, orgId, ids, lock);
  return new Map(rows.map((r) => [r.id as number, r]));
}

/** The spec's `type`: gmail for the Google family, outlook for Microsoft, else the provider name (smtp, zoho...). */
export function typeOf(provider: string): string {
  if (provider === 'google') return 'gmail';
  if (provider === 'microsoft') return 'outlook';
  return provider;
}

/**
 * The v1 status vocabulary has five values; v2's `disconnected` shows as `paused` in /v1 (the mailbox
 * neither sends nor warms; `authStatus` says `disconnected`), so the list filter `paused` finds it.
 */
export function v1Status(status: string): string {
  return status === 'disconnected' ? 'paused' : status;
}

/** The account statuses a /v1 status filter value selects. */
export function statusesFor(filter: string): string[] {
  return filter === 'paused' ? ['paused', 'disconnected'] : [filter];
}

export function authStatusOf(account: Row): string {
  switch (account.status) {
    case 'auth-expired':
      return 'expired';
    case 'error':
      return 'error';
    case 'disconnected':
      return 'disconnected';
    default:
      return 'connected';
  }
}

/** warmupStatus and warmup-status `current`: active (warming), pending (asked for, check running), paused, inactive. */
export function warmupStatusOf(account: Row): string {
  if (account.status === 'warming') return 'active';
  if (
    account.warmup_requested &&
    account.verification === 'pending' &&
    !['error', 'auth-expired', 'disconnected'].includes(account.status)
  )
    return 'pending';
  if (account.status === 'paused') return 'paused';
  return 'inactive';
}

export interface Scores {
  warmupScore: number;
  outreachReadinessStatus: string;
}

/**
 * warmupScore: the inbox rate (0..100) of the account's warmup sends of the last 14 days, 0 without
 * sends. outreachReadinessStatus: readyForOutreach (connected, score >= 85 over >= 50 sends),
 * needsAttention (error, auth-expired, disconnected), warmingUp (warmup running or asked for), notReady.
 */
export async function scoresOf(db: Queryable, accounts: Row[], now: number): Promise<Map<number, Scores>> {
  const out = new Map<number, Scores>();
  if (!accounts.length) return out;
  const since = new Date(now - SCORE_WINDOW_DAYS * 86_400_000);
  const rows = await warmupSendCounts(
    db,
    accounts.map((a) => a.id),
    since,
    new Date(now),
  );
  const agg = new Map(rows.map((r) => [r.account_id as number, r]));
  for (const account of accounts) {
    const aggregate = agg.get(account.id);
    const sent = aggregate?.sent ?? 0;
    const score = sent ? Math.round((100 * aggregate!.inbox) / sent) : 0;
    let readiness: string;
    if (['error', 'auth-expired', 'disconnected'].includes(account.status)) readiness = 'needsAttention';
    else if (score >= READY_SCORE && sent >= READY_MIN_SENT) readiness = 'readyForOutreach';
    else if (account.status === 'warming' || account.warmup_requested) readiness = 'warmingUp';
    else readiness = 'notReady';
    out.set(account.id, { warmupScore: score, outreachReadinessStatus: readiness });
  }
  return out;
}

const wsId = (a: Row) => (a.provider_workspace_id == null ? null : String(a.provider_workspace_id));

/** Account items (list, tag assign and unassign), in the order of `accounts`. */
export async function accountItems(db: Queryable, accounts: Row[], now: number) {
  if (!accounts.length) return [];
  const ids = accounts.map((a) => a.id);
  const [scores, tagRows] = await Promise.all([scoresOf(db, accounts, now), tagNamesOf(db, ids)]);
  const tags = new Map<number, string[]>();
  for (const row of tagRows) tags.set(row.account_id, [...(tags.get(row.account_id) ?? []), row.name]);
  return accounts.map((account) => ({
    id: account.id,
    fromEmail: account.email_address,
    fromName: account.from_name,
    type: typeOf(account.provider),
    status: v1Status(account.status),
    createdAt: isoOrNull(account.created_at),
    warmupScore: scores.get(account.id)!.warmupScore,
    outreachReadinessStatus: scores.get(account.id)!.outreachReadinessStatus,
    workspaceId: wsId(account),
    tags: tags.get(account.id) ?? [],
  }));
}

/** Account status objects (single and bulk), in the order of `accounts`. healthScore is the cached setup score. */
export async function accountStatuses(db: Queryable, accounts: Row[], now: number) {
  if (!accounts.length) return [];
  const [scores, cached] = await Promise.all([
    scoresOf(db, accounts, now),
    cachedSetupScores(
      db,
      accounts.map((a) => a.id),
    ),
  ]);
  const health = new Map(cached.map((r) => [r.account_id as number, r.score as number]));
  return accounts.map((account) => ({
    emailAccountId: account.id,
    fromEmail: account.email_address,
    type: typeOf(account.provider),
    authStatus: authStatusOf(account),
    warmupStatus: warmupStatusOf(account),
    healthScore: health.get(account.id) ?? null,
    warmupScore: scores.get(account.id)!.warmupScore,
    outreachReadinessStatus: scores.get(account.id)!.outreachReadinessStatus,
    connectionError: account.connection_error ?? null,
    lastConnectedAt: isoOrNull(account.last_connected_at),
    workspaceId: wsId(account),
  }));
}

/** The longest date range a /v1 report accepts, both ends included. */
export const MAX_RANGE_DAYS = 366;

/** from <= to and at most MAX_RANGE_DAYS days, inclusive (dates are UTC calendar days). */
export function checkRange(from: string, to: string, names: [string, string]): void {
  if (from > to)
    throw new ApiError('invalid_request', `${names[0]}: must not be after ${names[1]}`, { field: names[0] });
  if (daysBetween(from, to) + 1 > MAX_RANGE_DAYS) {
    throw new ApiError('invalid_request', `${names[1]}: the range spans at most ${MAX_RANGE_DAYS} days`, {
      field: names[1],
    });
  }
}

/** A percentage with two decimals; 0 without sends. */
export const rate = (inbox: number, sent: number) => (sent ? Math.round((10_000 * inbox) / sent) / 100 : 0);

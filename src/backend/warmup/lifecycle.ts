// Warmup on and off: enable, pause, resume, the send-and-receive check's outcome, and the automatic
// start (spec, States). Capacity checks lock the organization row first, so two enables can never
// both take the last warming slot.
import { ApiError } from '../../http/errors.js';
import type { Row } from '../../db/index.js';
import type { BackendServices } from '../services.js';
import { dnsPasses, getAccount, getAccountById, liveDns } from '../mailbox/index.js';
import { capacityError, capacityLeft, orgOfAccount, orgOfWorkspace } from './org.js';
import {
  accountsDueToStart,
  markAutoWarmup,
  markPaused,
  markWarming,
  rememberWarmupRequest,
  storeVerification,
  withdrawWarmupRequest,
} from './queries.js';

type StartOutcome =
  | { kind: 'ok' }
  | { kind: 'pending' }
  | { kind: 'failed' }
  | { kind: 'status'; status: string }
  | { kind: 'full'; error: ApiError };

/**
 * `enable` (from active or paused) and `resume` (from paused). While the check is pending the request
 * is remembered (warmup_requested) and the call answers 409; warmup then starts by itself when the
 * check passes. Starting an account that is warming already is a no-op.
 */
export async function startWarmup(
  svc: BackendServices,
  workspaceId: number,
  accountId: number,
  via: 'enable' | 'resume',
): Promise<Row> {
  const now = new Date(svc.clock.now());
  const out: StartOutcome = await svc.db.tx(async (tx) => {
    const org = await orgOfWorkspace(svc, tx, workspaceId, 'update');
    const acc = await getAccount(tx, workspaceId, accountId, true);
    if (acc.status === 'warming') return { kind: 'ok' };
    const from = via === 'resume' ? ['paused'] : ['active', 'paused'];
    if (!from.includes(acc.status)) return { kind: 'status', status: acc.status };
    if (acc.verification === 'pending') {
      await rememberWarmupRequest(tx, accountId, now);
      return { kind: 'pending' };
    }
    if (acc.verification === 'failed') return { kind: 'failed' };
    const capacity = await capacityLeft(tx, org);
    if (!capacity.ok) return { kind: 'full', error: capacityError(org, capacity.cap!, capacity.warming) };
    await markWarming(tx, accountId, now);
    return { kind: 'ok' };
  });
  switch (out.kind) {
    case 'pending':
      throw new ApiError(
        'mailbox_verification_pending',
        'The mailbox check is still running; warmup starts by itself when it passes, so there is no need to retry.',
        {
          accountId,
          verification: 'pending',
          warmupRequested: true,
        },
      );
    case 'failed':
      throw new ApiError(
        'mailbox_verification_failed',
        'The mailbox failed the send-and-receive check; fix the mailbox before enabling warmup.',
        {
          accountId,
          verification: 'failed',
        },
      );
    case 'status':
      throw new ApiError(
        'conflict',
        via === 'resume'
          ? `Warmup is not paused (account status ${out.status}); use warmup/enable.`
          : `Warmup cannot start while the account is ${out.status}.`,
        { accountId, status: out.status },
      );
    case 'full':
      throw out.error;
  }
  return getAccount(svc.db, workspaceId, accountId);
}

/** Pause a warming mailbox, or withdraw a remembered enable request. Pausing a paused mailbox is a no-op. */
export async function pauseWarmup(svc: BackendServices, workspaceId: number, accountId: number): Promise<Row> {
  const now = new Date(svc.clock.now());
  await svc.db.tx(async (tx) => {
    const acc = await getAccount(tx, workspaceId, accountId, true);
    if (acc.status === 'warming') {
      await markPaused(tx, accountId, now);
    } else if (acc.warmup_requested) {
      await withdrawWarmupRequest(tx, accountId, now);
    } else if (acc.status !== 'paused') {
      throw new ApiError('conflict', `Warmup is not running (account status ${acc.status}).`, {
        accountId,
        status: acc.status,
      });
    }
  });
  return getAccount(svc.db, workspaceId, accountId);
}

export type AutoStartResult =
  'started' | 'already_warming' | 'not_eligible' | 'dns_failed' | 'warming_capacity_reached' | 'not_found';

function wantsStart(account: Row): 'explicit' | 'auto' | null {
  if (account.verification !== 'passed') return null;
  // An enable/resume remembered while the check ran; or a partner-OAuth mailbox (DNS must pass too).
  if (account.warmup_requested && (account.status === 'active' || account.status === 'paused')) return 'explicit';
  if (account.auto_warmup && account.status === 'active') return 'auto';
  return null;
}

/**
 * Start warmup by itself when it is due: the check passed and warmup was requested, or the mailbox
 * came through partner OAuth and its DNS passes; unless the plan's warming cap is reached (the
 * request stays remembered and the auto-start job retries).
 */
export async function tryAutoStart(svc: BackendServices, accountId: number): Promise<AutoStartResult> {
  const pre = await getAccountById(svc.db, accountId);
  if (!pre) return 'not_found';
  if (pre.status === 'warming') return 'already_warming';
  const want = wantsStart(pre);
  if (!want) return 'not_eligible';
  let dnsOk = false;
  if (want === 'auto') {
    // The lookup runs outside the transaction so no lock waits on DNS.
    try {
      dnsOk = dnsPasses(await liveDns(svc, accountId, pre.email_address));
    } catch {
      dnsOk = false;
    }
  }
  const now = new Date(svc.clock.now());
  return svc.db.tx(async (tx): Promise<AutoStartResult> => {
    const org = await orgOfAccount(svc, tx, accountId, 'update');
    const acc = org && (await getAccountById(tx, accountId, true));
    if (!org || !acc) return 'not_found';
    if (acc.status === 'warming') return 'already_warming';
    const wanted = wantsStart(acc);
    if (!wanted) return 'not_eligible';
    if (wanted === 'auto' && !dnsOk) return 'dns_failed';
    const capacity = await capacityLeft(tx, org);
    if (!capacity.ok) return 'warming_capacity_reached';
    await markWarming(tx, accountId, now);
    return 'started';
  });
}

/**
 * The mailbox checker's outcome (POST /internal/accounts/{id}/verification). A failure withdraws a
 * remembered enable request (the caller fixes the mailbox and enables again); a pass may start warmup.
 */
export async function recordVerification(
  svc: BackendServices,
  accountId: number,
  result: 'passed' | 'failed',
): Promise<{ autoStart: AutoStartResult | null } | null> {
  const now = new Date(svc.clock.now());
  const found = await svc.db.tx(async (tx) => {
    const acc = await getAccountById(tx, accountId, true);
    if (!acc) return false;
    await storeVerification(tx, accountId, result, now);
    return true;
  });
  if (!found) return null;
  return { autoStart: result === 'passed' ? await tryAutoStart(svc, accountId) : null };
}

/**
 * For the partner OAuth route (spec, States): mark the mailbox to start warming without an enable call
 * once its DNS records and the send-and-receive check both pass, and start it now if they already do.
 * Call it after the account row is committed.
 */
export async function partnerOauthConnected(svc: BackendServices, accountId: number): Promise<AutoStartResult> {
  if (!(await markAutoWarmup(svc.db, accountId))) return 'not_found';
  return tryAutoStart(svc, accountId);
}

/**
 * The auto-start job: retry remembered starts (the warming cap had no room when the check passed) and
 * partner-OAuth mailboxes whose DNS did not pass yet (re-checked at most hourly), a bounded batch per run.
 */
export async function autoStartDue(svc: BackendServices, limit = 100): Promise<Record<number, AutoStartResult>> {
  const now = svc.clock.now();
  const due = await accountsDueToStart(svc.db, limit, new Date(now - 3_600_000));
  const out: Record<number, AutoStartResult> = {};
  for (const accountId of due) out[accountId] = await tryAutoStart(svc, accountId);
  return out;
}

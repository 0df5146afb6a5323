// Token refresh through the partner callback (spec, partner OAuth rule 1): before a partner mailbox's
// access token expires, the backend POSTs `{accountId, emailAddress, provider}` to the organization's
// verified callback and expects `{accessToken, expiresAt}` back. Rows are claimed with an UPDATE over
// `FOR UPDATE SKIP LOCKED`, so several backends never refresh one token twice; failures back off
// exponentially, and a token that runs out meanwhile turns the mailbox `auth-expired` (a later fresh
// token makes it active again and hands it back to the warmup domain's automatic start).
import { z } from 'zod';
import type { BackendServices } from '../services.js';
import { partnerOauthConnected } from '../warmup/index.js';

/** Refresh this long before expiry. */
export const REFRESH_AHEAD_MS = 15 * 60_000;
/** How long one backend holds a claimed row (longer than the callback timeout). */
export const CLAIM_MS = 2 * 60_000;
export const CALLBACK_TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 30 * 60_000;
const BATCH = 50;
const PARALLEL = 10;

const callbackAnswer = z.object({
  accessToken: z.string().min(1).max(8192),
  expiresAt: z.iso.datetime({ offset: true }),
});

export interface RefreshRun {
  refreshed: number[];
  failed: number[];
  expired: number[];
}

export function backoffMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, 60_000 * 2 ** Math.max(0, failures - 1));
}

export async function refreshTokens(svc: BackendServices): Promise<RefreshRun> {
  const now = new Date(svc.clock.now());
  const out: RefreshRun = { refreshed: [], failed: [], expired: [] };

  const claimed = await svc.db.query(
    `UPDATE accounts a SET oauth_refresh_claimed_until = $2
      FROM organizations o, workspaces w
     WHERE a.id IN (
             SELECT a2.id FROM accounts a2
               JOIN workspaces w2 ON w2.id = a2.workspace_id AND w2.deleted_at IS NULL
               JOIN organizations o2 ON o2.id = w2.organization_id
              WHERE a2.oauth_source = 'partner' AND a2.status <> 'disconnected'
                AND o2.partner_callback_verified AND o2.partner_callback_url IS NOT NULL
                AND a2.oauth_expires_at <= $3
                AND (a2.oauth_refresh_next_at IS NULL OR a2.oauth_refresh_next_at <= $1)
                AND (a2.oauth_refresh_claimed_until IS NULL OR a2.oauth_refresh_claimed_until <= $1)
              ORDER BY a2.oauth_expires_at LIMIT ${BATCH}
              FOR UPDATE OF a2 SKIP LOCKED)
       AND w.id = a.workspace_id AND o.id = w.organization_id
     RETURNING a.id, a.email_address, a.provider, a.status, a.oauth_expires_at, a.oauth_refresh_failures, o.partner_callback_url`,
    [now, new Date(now.getTime() + CLAIM_MS), new Date(now.getTime() + REFRESH_AHEAD_MS)],
  );

  const refreshOne = async (account: (typeof claimed)[number]) => {
    const ok = await callPartner(account.partner_callback_url, { accountId: account.id, emailAddress: account.email_address, provider: account.provider });
    if (ok.kind === 'ok' && Date.parse(ok.expiresAt) > svc.clock.now()) {
      const [after] = await svc.db.query(
        `UPDATE accounts SET oauth_access_token_sealed = $2, oauth_expires_at = $3, oauth_refresh_failures = 0, oauth_refresh_error = NULL,
            oauth_refresh_next_at = NULL, oauth_refresh_claimed_until = NULL, oauth_refreshed_at = $4,
            status = CASE WHEN status = 'auth-expired' THEN 'active' ELSE status END,
            connection_error = CASE WHEN status = 'auth-expired' THEN NULL ELSE connection_error END,
            updated_at = $4
          WHERE id = $1 RETURNING status`,
        [account.id, svc.credentials.seal('oauth_access_token', ok.accessToken), new Date(ok.expiresAt), new Date(svc.clock.now())],
      );
      // A mailbox that had run out is active again: it warms again by itself once its checks pass.
      if (after?.status === 'active' && account.status === 'auth-expired') await partnerOauthConnected(svc, account.id);
      out.refreshed.push(account.id);
      return;
    }
    const error = ok.kind === 'ok' ? 'the callback answered an expiresAt in the past' : ok.error;
    const failures = account.oauth_refresh_failures + 1;
    await svc.db.query(
      `UPDATE accounts SET oauth_refresh_failures = $2, oauth_refresh_error = $3, oauth_refresh_next_at = $4,
          oauth_refresh_claimed_until = NULL, updated_at = $5
        WHERE id = $1`,
      [account.id, failures, error, new Date(svc.clock.now() + backoffMs(failures)), new Date(svc.clock.now())],
    );
    svc.log.warn({ accountId: account.id, failures, error }, 'partner token refresh failed');
    out.failed.push(account.id);
  };
  // A few callbacks at a time: a batch finishes well within the claim (BATCH / PARALLEL * timeout < CLAIM_MS).
  await inParallel(claimed, PARALLEL, refreshOne);

  // A token that ran out without a successful refresh: the mailbox cannot send, so it stops warming.
  const expired = await svc.db.query(
    `UPDATE accounts SET status = 'auth-expired', connection_error = 'The access token expired and the partner callback gave no fresh one.',
        updated_at = $1
      WHERE oauth_source = 'partner' AND oauth_expires_at <= $1 AND status IN ('active','warming') RETURNING id`,
    [now],
  );
  out.expired = expired.map((r) => r.id);
  return out;
}

type CallResult = { kind: 'ok'; accessToken: string; expiresAt: string } | { kind: 'error'; error: string };

async function callPartner(url: string, body: { accountId: number; emailAddress: string; provider: string }): Promise<CallResult> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'keygate-token-refresh' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
      redirect: 'error',
    });
  } catch (err) {
    return { kind: 'error', error: `callback unreachable (${(err as Error).name})` };
  }
  if (!res.ok) {
    await res.body?.cancel();
    return { kind: 'error', error: `callback answered HTTP ${res.status}` };
  }
  let json: unknown;
  try {
    json = await res.json();
  } catch {
    return { kind: 'error', error: 'callback answered something other than JSON' };
  }
  const parsed = callbackAnswer.safeParse(json);
  if (!parsed.success) return { kind: 'error', error: `callback answer invalid at ${parsed.error.issues[0].path.join('.') || '(body)'}` };
  return { kind: 'ok', ...parsed.data };
}

/** Run `fn` over `items`, at most `limit` at once. */
async function inParallel<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

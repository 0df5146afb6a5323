// Token refresh through the partner callback (spec, partner OAuth rule 1): before a partner mailbox's
// access token expires, the backend POSTs `{accountId, emailAddress, provider}` to the organization's
// verified callback and expects `{accessToken, expiresAt}` back. Rows are claimed with an UPDATE over
// `FOR UPDATE SKIP LOCKED`, so several backends never refresh one token twice; failures back off
// exponentially, and a token that runs out meanwhile turns the mailbox `auth-expired` (a later fresh
// token makes it active again and hands it back to the warmup domain's automatic start).
import { z } from 'zod';
import type { BackendServices } from '../services.js';
import { partnerOauthConnected } from '../warmup/index.js';
import {
  claimTokensToRefresh,
  expireLapsedPartnerTokens,
  recordRefreshFailure,
  storeRefreshedToken,
} from './queries.js';

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

  const claimed = await claimTokensToRefresh(
    svc.db,
    now,
    new Date(now.getTime() + CLAIM_MS),
    new Date(now.getTime() + REFRESH_AHEAD_MS),
    BATCH,
  );

  const refreshOne = async (account: (typeof claimed)[number]) => {
    const ok = await callPartner(account.partner_callback_url, {
      accountId: account.id,
      emailAddress: account.email_address,
      provider: account.provider,
    });
    if (ok.kind === 'ok' && Date.parse(ok.expiresAt) > svc.clock.now()) {
      const after = await storeRefreshedToken(
        svc.db,
        account.id,
        svc.credentials.seal('oauth_access_token', ok.accessToken),
        new Date(ok.expiresAt),
        new Date(svc.clock.now()),
      );
      // A mailbox that had run out is active again: it warms again by itself once its checks pass.
      if (after?.status === 'active' && account.status === 'auth-expired') await partnerOauthConnected(svc, account.id);
      out.refreshed.push(account.id);
      return;
    }
    const error = ok.kind === 'ok' ? 'the callback answered an expiresAt in the past' : ok.error;
    const failures = account.oauth_refresh_failures + 1;
    await recordRefreshFailure(
      svc.db,
      account.id,
      failures,
      error,
      new Date(svc.clock.now() + backoffMs(failures)),
      new Date(svc.clock.now()),
    );
    svc.log.warn({ accountId: account.id, failures, error }, 'partner token refresh failed');
    out.failed.push(account.id);
  };
  // A few callbacks at a time: a batch finishes well within the claim (BATCH / PARALLEL * timeout < CLAIM_MS).
  await inParallel(claimed, PARALLEL, refreshOne);

  // A token that ran out without a successful refresh: the mailbox cannot send, so it stops warming.
  out.expired = await expireLapsedPartnerTokens(svc.db, now);
  return out;
}

type CallResult = { kind: 'ok'; accessToken: string; expiresAt: string } | { kind: 'error'; error: string };

async function callPartner(
  url: string,
  body: { accountId: number; emailAddress: string; provider: string },
): Promise<CallResult> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'user-agent': 'keygate-token-refresh',
      },
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
  if (!parsed.success)
    return { kind: 'error', error: `callback answer invalid at ${parsed.error.issues[0].path.join('.') || '(body)'}` };
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

// Connecting a mailbox through the partner OAuth route (spec, partner OAuth rules 1 to 3). Written as a
// function of the organization and workspace so the /v1 partner route can share it.
import { ApiError } from '../../http/errors.js';
import { planOf } from '../../config/plans.js';
import type { Row } from '../../db/types.js';
import type { BackendServices } from '../services.js';
import { profileAddresses, type OAuthProvider } from './profile.js';
import { partnerOauthConnected, type AutoStartResult } from '../warmup/index.js';
import {
  findAccount,
  findPartnerOrganization,
  insertPartnerAccount,
  lockAccountByEmail,
  reconnectPartnerAccount,
  workspaceOfOrganizationExists,
} from './queries.js';

/** The access token must outlive the request by more than this (spec: "more than five minutes ahead"). */
export const MIN_TOKEN_LIFETIME_MS = 5 * 60_000;
/** A new mailbox's daily max before the plan's per-mailbox cap applies (the accounts default). */
const DEFAULT_MAX_LIMIT = 40;

export interface ConnectInput {
  organizationId: number;
  workspaceId: number;
  provider: OAuthProvider;
  emailAddress: string;
  accessToken: string;
  expiresAt: Date;
}

export interface Connected {
  created: boolean;
  account: ReturnType<typeof accountView>;
}

/**
 * Where the mailbox stands on warming without an enable call (spec, States): `warming`; `waiting` until
 * `reason` clears (the warmup domain's auto-start job and the mailbox checker retry); or `off`.
 */
export interface WarmupView {
  state: 'warming' | 'waiting' | 'off';
  reason: 'verification_pending' | 'verification_failed' | 'dns_failed' | 'warming_capacity_reached' | 'paused' | null;
}

export function warmupView(account: Row, result: AutoStartResult | null): WarmupView {
  if (account.status === 'warming' || result === 'started' || result === 'already_warming')
    return { state: 'warming', reason: null };
  if (account.status === 'paused') return { state: 'off', reason: 'paused' };
  if (result === 'dns_failed' || result === 'warming_capacity_reached') return { state: 'waiting', reason: result };
  if (account.status === 'active' && account.verification === 'pending')
    return { state: 'waiting', reason: 'verification_pending' };
  if (account.status === 'active' && account.verification === 'failed')
    return { state: 'waiting', reason: 'verification_failed' };
  return { state: 'off', reason: null };
}

export function accountView(account: Row, warmup: WarmupView) {
  return {
    id: account.id,
    workspaceId: account.workspace_id,
    emailAddress: account.email_address,
    provider: account.provider,
    status: account.status,
    verification: account.verification,
    connectedVia: 'partner_oauth',
    // The token itself is never returned; its expiry is what a partner needs to plan refreshes.
    tokenExpiresAt: new Date(account.oauth_expires_at).toISOString(),
    warmupMaxLimit: account.warmup_max_limit,
    warmup,
    createdAt: new Date(account.created_at).toISOString(),
  };
}

/** Rule 1: every call is refused unless the organization registered and verified a partner callback. */
export async function assertPartnerConfigured(svc: BackendServices, organizationId: number): Promise<Row> {
  const org = await findPartnerOrganization(svc.db, organizationId);
  if (!org || !org.partner_callback_url || !org.partner_callback_verified) {
    throw new ApiError(
      'partner_not_configured',
      'The organization has no verified partner callback: register and verify a token-refresh endpoint first.',
    );
  }
  return org;
}

/** `org`: the row assertPartnerConfigured answered, when the caller already checked rule 1. */
export async function connectPartnerMailbox(svc: BackendServices, input: ConnectInput, org?: Row): Promise<Connected> {
  org ??= await assertPartnerConfigured(svc, input.organizationId);
  const now = svc.clock.now();
  if (input.expiresAt.getTime() <= now + MIN_TOKEN_LIFETIME_MS) {
    throw new ApiError('invalid_request', 'expiresAt: must be more than five minutes in the future.', {
      field: 'expiresAt',
    });
  }
  const email = input.emailAddress.toLowerCase();
  // Rule 2: the token names its mailbox; the caller's address must be that mailbox.
  const addresses = await profileAddresses(svc.config, input.provider, input.accessToken);
  if (!addresses.includes(email)) {
    throw new ApiError('email_mismatch', 'The access token belongs to a different mailbox than emailAddress.', {
      field: 'emailAddress',
    });
  }
  const maxLimit = Math.min(
    DEFAULT_MAX_LIMIT,
    planOf(svc.plans(), org.plan).plan.maxWarmupPerAccount ?? DEFAULT_MAX_LIMIT,
  );
  const at = new Date(now);

  const result = await svc.db.tx(async (tx) => {
    if (!(await workspaceOfOrganizationExists(tx, input.workspaceId, input.organizationId)))
      throw new ApiError('not_found', `No workspace ${input.workspaceId}.`);
    const cur = await lockAccountByEmail(tx, email);
    if (cur) {
      // Rule 3: a mailbox belongs to exactly one workspace. Which one is not said (it may be another organization's).
      if (cur.workspace_id !== input.workspaceId)
        throw new ApiError('conflict', 'This mailbox is already connected in another workspace.', {
          field: 'emailAddress',
        });
      if (cur.oauth_source !== 'partner' || cur.provider !== input.provider) {
        throw new ApiError('conflict', 'This mailbox is already connected in this workspace by another method.', {
          field: 'emailAddress',
          accountId: cur.id,
        });
      }
      // A reconnect with a fresh token: an expired or broken connection becomes active again.
      const row = await reconnectPartnerAccount(
        tx,
        cur.id,
        svc.credentials.seal('oauth_access_token', input.accessToken),
        input.expiresAt,
        at,
      );
      return { row, created: false };
    }
    const row = await insertPartnerAccount(tx, {
      workspaceId: input.workspaceId,
      email,
      provider: input.provider,
      maxLimit,
      sealedToken: svc.credentials.seal('oauth_access_token', input.accessToken),
      expiresAt: input.expiresAt,
      at,
    });
    return { row, created: true };
  });

  // An active partner mailbox warms without an enable call once DNS and the send-and-receive check pass
  // (the warmup domain's auto_warmup): a new one waits for its check; a reconnected one whose check
  // passed earlier may start at once. A warming or user-paused mailbox keeps its state.
  const auto = result.row.status === 'active' ? await partnerOauthConnected(svc, result.row.id) : null;
  const fresh = (await findAccount(svc.db, result.row.id))!;
  const warmup = warmupView(fresh, auto);
  svc.log.info(
    {
      accountId: fresh.id,
      workspaceId: input.workspaceId,
      provider: input.provider,
      created: result.created,
      warmup: warmup.state,
    },
    'partner mailbox connected',
  );
  return { created: result.created, account: accountView(fresh, warmup) };
}

// The SQL of partner OAuth: the partner callback check, connecting a mailbox (connect.ts) and the token
// refresh over the partner callback (refresh.ts).
import type { Queryable, Row } from '../../db/types.js';

/** The organization's plan and partner callback (rule 1 reads whether it is registered and verified). */
export async function findPartnerOrganization(db: Queryable, organizationId: number): Promise<Row | undefined> {
  const rows = await db.query(
    `SELECT id, plan, partner_callback_url, partner_callback_verified FROM organizations WHERE id = $1`,
    [organizationId],
  );
  return rows[0];
}

export async function workspaceOfOrganizationExists(
  db: Queryable,
  workspaceId: number,
  organizationId: number,
): Promise<boolean> {
  const rows = await db.query(
    `SELECT id FROM workspaces WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`,
    [workspaceId, organizationId],
  );
  return rows.length > 0;
}

/** The account of this (lower-cased) address, locked for the rest of the transaction. */
export async function lockAccountByEmail(db: Queryable, email: string): Promise<Row | undefined> {
  const rows = await db.query(`SELECT * FROM accounts WHERE lower(email_address) = $1 FOR UPDATE`, [email]);
  return rows[0];
}

export async function findAccount(db: Queryable, accountId: number): Promise<Row | undefined> {
  const rows = await db.query(`SELECT * FROM accounts WHERE id = $1`, [accountId]);
  return rows[0];
}

/** A reconnect with a fresh token: an expired or broken connection becomes active again. */
export async function reconnectPartnerAccount(
  db: Queryable,
  accountId: number,
  sealedToken: string,
  expiresAt: Date,
  at: Date,
): Promise<Row> {
  const [row] = await db.query(
    `UPDATE accounts SET oauth_access_token_sealed = $2, oauth_expires_at = $3,
        status = CASE WHEN status IN ('auth-expired','error','disconnected') THEN 'active' ELSE status END,
        oauth_refresh_failures = 0, oauth_refresh_error = NULL, oauth_refresh_next_at = NULL, oauth_refresh_claimed_until = NULL,
        connection_error = NULL, last_connected_at = $4, updated_at = $4
      WHERE id = $1 RETURNING *`,
    [accountId, sealedToken, expiresAt, at],
  );
  return row;
}

export interface NewPartnerAccount {
  workspaceId: number;
  email: string;
  provider: string;
  maxLimit: number;
  sealedToken: string;
  expiresAt: Date;
  at: Date;
}

export async function insertPartnerAccount(db: Queryable, input: NewPartnerAccount): Promise<Row> {
  const [row] = await db.query(
    `INSERT INTO accounts (workspace_id, email_address, provider, status, verification, warmup_max_limit, warmup_current_limit,
        oauth_access_token_sealed, oauth_expires_at, oauth_source, last_connected_at, created_at, updated_at)
     VALUES ($1, $2, $3, 'active', 'pending', $4, 5, $5, $6, 'partner', $7, $7, $7) RETURNING *`,
    [input.workspaceId, input.email, input.provider, input.maxLimit, input.sealedToken, input.expiresAt, input.at],
  );
  return row;
}

/**
 * Claim up to `batch` partner accounts whose token expires before `refreshBefore` and that are neither backing
 * off nor claimed, until `claimUntil`. `UPDATE ... FOR UPDATE SKIP LOCKED`: several backends never claim one row twice.
 */
export async function claimTokensToRefresh(
  db: Queryable,
  now: Date,
  claimUntil: Date,
  refreshBefore: Date,
  batch: number,
): Promise<Row[]> {
  return db.query(
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
              ORDER BY a2.oauth_expires_at LIMIT ${Number(batch)}
              FOR UPDATE OF a2 SKIP LOCKED)
       AND w.id = a.workspace_id AND o.id = w.organization_id
     RETURNING a.id, a.email_address, a.provider, a.status, a.oauth_expires_at, a.oauth_refresh_failures, o.partner_callback_url`,
    [now, claimUntil, refreshBefore],
  );
}

/** A refreshed token; an `auth-expired` mailbox becomes active again. Returns the new status. */
export async function storeRefreshedToken(
  db: Queryable,
  accountId: number,
  sealedToken: string,
  expiresAt: Date,
  at: Date,
): Promise<Row | undefined> {
  const [after] = await db.query(
    `UPDATE accounts SET oauth_access_token_sealed = $2, oauth_expires_at = $3, oauth_refresh_failures = 0, oauth_refresh_error = NULL,
        oauth_refresh_next_at = NULL, oauth_refresh_claimed_until = NULL, oauth_refreshed_at = $4,
        status = CASE WHEN status = 'auth-expired' THEN 'active' ELSE status END,
        connection_error = CASE WHEN status = 'auth-expired' THEN NULL ELSE connection_error END,
        updated_at = $4
      WHERE id = $1 RETURNING status`,
    [accountId, sealedToken, expiresAt, at],
  );
  return after;
}

/** A failed refresh: count it, remember why, retry at `nextAt`, release the claim. */
export async function recordRefreshFailure(
  db: Queryable,
  accountId: number,
  failures: number,
  error: string,
  nextAt: Date,
  at: Date,
): Promise<void> {
  await db.query(
    `UPDATE accounts SET oauth_refresh_failures = $2, oauth_refresh_error = $3, oauth_refresh_next_at = $4,
        oauth_refresh_claimed_until = NULL, updated_at = $5
      WHERE id = $1`,
    [accountId, failures, error, nextAt, at],
  );
}

/** Partner mailboxes whose token ran out at `now` stop sending: `auth-expired`. Returns their ids. */
export async function expireLapsedPartnerTokens(db: Queryable, now: Date): Promise<number[]> {
  const rows = await db.query(
    `UPDATE accounts SET status = 'auth-expired', connection_error = 'The access token expired and the partner callback gave no fresh one.',
        updated_at = $1
      WHERE oauth_source = 'partner' AND oauth_expires_at <= $1 AND status IN ('active','warming') RETURNING id`,
    [now],
  );
  return rows.map((r) => r.id as number);
}

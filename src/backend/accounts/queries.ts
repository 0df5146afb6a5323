// The SQL of the account routes of /v2 and /v1 (v1-routes.ts, the setup and deliverability scores), every
// query scoped by the path workspace, and the seed file's mailboxes (written by id). Account loading and
// the record views are in ../mailbox/.
import type { Queryable, Row } from '../../db/types.js';
import type { sealMailbox } from '../credentials/index.js';
import { ACCOUNT_COLUMNS, ORG_ACCOUNTS } from '../mailbox/index.js';

export interface AccountFilter {
  status?: string;
  maxLimitMin?: number;
  maxLimitMax?: number;
  /** A tag id (digits) or a tag name (case-insensitive). */
  tag?: string;
  /** Matched anywhere in the address or the sender name. */
  search?: string;
}

export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (special) => '\\' + special);
}

/** One page of the workspace's accounts matching the filter, and how many match in all. */
export async function listAccounts(
  db: Queryable,
  workspaceId: number,
  filter: AccountFilter,
  page: { limit: number; offset: number },
) {
  const params: unknown[] = [workspaceId];
  const where = ['a.workspace_id = $1'];
  if (filter.status) where.push(`a.status = $${params.push(filter.status)}`);
  if (filter.maxLimitMin !== undefined) where.push(`a.warmup_max_limit >= $${params.push(filter.maxLimitMin)}`);
  if (filter.maxLimitMax !== undefined) where.push(`a.warmup_max_limit <= $${params.push(filter.maxLimitMax)}`);
  if (filter.tag !== undefined) {
    where.push(
      /^\d{1,9}$/.test(filter.tag)
        ? `EXISTS (SELECT 1 FROM account_tags x WHERE x.account_id = a.id AND x.tag_id = $${params.push(Number(filter.tag))})`
        : `EXISTS (SELECT 1 FROM account_tags x JOIN tags t ON t.id = x.tag_id WHERE x.account_id = a.id AND lower(t.name) = lower($${params.push(filter.tag)}))`,
    );
  }
  if (filter.search !== undefined) {
    const placeholder = params.push(`%${escapeLike(filter.search)}%`);
    where.push(`(a.email_address ILIKE $${placeholder} ESCAPE '\\' OR a.from_name ILIKE $${placeholder} ESCAPE '\\')`);
  }
  const condition = where.join(' AND ');
  const [{ n: total }] = await db.query(`SELECT count(*)::int AS n FROM accounts a WHERE ${condition}`, params);
  const rows = await db.query(
    `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE ${condition} ORDER BY a.id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, page.limit, page.offset],
  );
  return { rows, total: total as number };
}

/** A mailbox belongs to exactly one workspace: its address is unique across every organization. */
export async function addressInUse(db: Queryable, emailAddress: string): Promise<boolean> {
  const rows = await db.query(`SELECT 1 FROM accounts WHERE lower(email_address) = lower($1)`, [emailAddress]);
  return rows.length > 0;
}

export interface NewMailbox {
  emailAddress: string;
  fromName: string | null | undefined;
  warmupMaxLimit: number;
  timeZone: string;
  sealed: ReturnType<typeof sealMailbox>;
  now: Date;
}

/** A new SMTP/IMAP mailbox (active, its check pending); its id. A concurrent duplicate raises 23505. */
export async function insertMailbox(db: Queryable, workspaceId: number, mailbox: NewMailbox): Promise<number> {
  const { sealed } = mailbox;
  const rows = await db.query(
    `INSERT INTO accounts (workspace_id, email_address, from_name, provider, status, verification, warmup_max_limit, warmup_current_limit,
       time_zone, smtp, imap, smtp_password_sealed, imap_password_sealed, last_connected_at, created_at, updated_at)
     VALUES ($1, $2, $3, 'smtp', 'active', 'pending', $4, 5, $5, $6::jsonb, $7::jsonb, $8, $9, $10, $10, $10) RETURNING id`,
    [
      workspaceId,
      mailbox.emailAddress,
      mailbox.fromName,
      mailbox.warmupMaxLimit,
      mailbox.timeZone,
      sealed.smtp,
      sealed.imap,
      sealed.smtpPasswordSealed,
      sealed.imapPasswordSealed,
      mailbox.now,
    ],
  );
  return rows[0].id;
}

export async function accountsByIds(db: Queryable, workspaceId: number, accountIds: number[]): Promise<Row[]> {
  return db.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.workspace_id = $1 AND a.id = ANY($2::int[])`, [
    workspaceId,
    accountIds,
  ]);
}

/** The ids among `accountIds` of the workspace's accounts, locked until the transaction ends, in id order. */
export async function lockAccountIds(db: Queryable, workspaceId: number, accountIds: number[]): Promise<number[]> {
  const rows = await db.query(
    `SELECT id FROM accounts WHERE workspace_id = $1 AND id = ANY($2::int[]) ORDER BY id FOR UPDATE`,
    [workspaceId, accountIds],
  );
  return rows.map((row) => row.id as number);
}

/** Deletes the account; its address, or null when the workspace has no such account. */
export async function deleteAccount(db: Queryable, workspaceId: number, accountId: number): Promise<string | null> {
  const rows = await db.query(`DELETE FROM accounts WHERE id = $1 AND workspace_id = $2 RETURNING id, email_address`, [
    accountId,
    workspaceId,
  ]);
  return rows[0]?.email_address ?? null;
}

/** Disconnects the account; false when the workspace has no such account. */
export async function disconnectAccount(
  db: Queryable,
  workspaceId: number,
  accountId: number,
  now: Date,
): Promise<boolean> {
  const rows = await db.query(
    // A disconnected mailbox keeps no credential: its OAuth token is dropped (the refresh job skips it).
    `UPDATE accounts SET status = 'disconnected', warmup_requested = false, auto_warmup = false,
       oauth_access_token_sealed = NULL, oauth_expires_at = NULL, updated_at = $3
     WHERE id = $1 AND workspace_id = $2 RETURNING id`,
    [accountId, workspaceId, now],
  );
  return rows.length > 0;
}

/** A blocklist check: how many of the lists named the domain or address, and how many did not. */
export interface Listing {
  listed: number;
  notListed: number;
}

/** An account's setup checks as stored: each check null when it did not run. */
export interface SetupChecks {
  spf: boolean | null;
  dkim: boolean | null;
  dmarc: boolean | null;
  mx: boolean | null;
  domain: Listing | null;
  ip: Listing | null;
  score: number;
}

/** Stores an account's setup score (a manual refresh also stamps manual_last_refreshed_at). */
export async function storeSetupScore(
  db: Queryable,
  id: number,
  checks: SetupChecks,
  now: number,
  manual: boolean,
): Promise<Row> {
  const rows = await db.query(
    `INSERT INTO v1_setup_scores (account_id, score, spf, dkim, dmarc, mx, ip_listed, ip_not_listed, domain_listed, domain_not_listed,
        updated_at, manual_last_refreshed_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11, CASE WHEN $12::boolean THEN $11::timestamptz END)
     ON CONFLICT (account_id) DO UPDATE SET score = $2, spf = $3, dkim = $4, dmarc = $5, mx = $6, ip_listed = $7, ip_not_listed = $8,
        domain_listed = $9, domain_not_listed = $10, updated_at = $11,
        manual_last_refreshed_at = CASE WHEN $12::boolean THEN $11::timestamptz ELSE v1_setup_scores.manual_last_refreshed_at END
     RETURNING *`,
    [
      id,
      checks.score,
      checks.spf,
      checks.dkim,
      checks.dmarc,
      checks.mx,
      checks.ip?.listed ?? null,
      checks.ip?.notListed ?? null,
      checks.domain?.listed ?? null,
      checks.domain?.notListed ?? null,
      new Date(now),
      manual,
    ],
  );
  return rows[0];
}

export async function cachedSetupScore(db: Queryable, accountId: number): Promise<Row | null> {
  const rows = await db.query(`SELECT * FROM v1_setup_scores WHERE account_id = $1`, [accountId]);
  return rows[0] ?? null;
}

/** The accounts whose cached setup score was stored before `before`, oldest first, at most 200. */
export async function staleSetupScoreAccounts(db: Queryable, before: Date): Promise<Row[]> {
  return db.query(
    `SELECT a.* FROM v1_setup_scores s JOIN accounts a ON a.id = s.account_id
      WHERE s.updated_at < $1 ORDER BY s.updated_at LIMIT 200`,
    [before],
  );
}

/** An account's warmup messages of [from, to) sent up to `now`, by the recipient's ESP: google -> gmail, microsoft -> outlook, anything else -> other. */
export async function deliverabilityByEsp(db: Queryable, accountId: number, from: Date, to: Date, now: Date) {
  return db.query<{ esp: string; sent: number; inbox: number; spam: number }>(
    `SELECT CASE recipient_esp WHEN 'google' THEN 'gmail' WHEN 'microsoft' THEN 'outlook' ELSE 'other' END AS esp,
            count(*)::int AS sent,
            count(*) FILTER (WHERE outcome = 'inbox')::int AS inbox,
            count(*) FILTER (WHERE outcome = 'spam')::int AS spam
       FROM warmup_messages WHERE account_id = $1 AND sent_at >= $2 AND sent_at < $3 AND sent_at <= $4 GROUP BY 1`,
    [accountId, from, to, now],
  );
}

// /v1 email accounts (v1-routes.ts): scoped by the partner key's organization.

const SORT_COLUMNS = {
  createdAt: 'a.created_at',
  fromEmail: 'lower(a.email_address)',
  fromName: 'lower(a.from_name)',
} as const;

export interface OrgAccountFilter {
  /** Matched in the lower-cased address or sender name. */
  search?: string;
  statuses?: string[];
  /** Tag names, lower case: an account with any of them matches. */
  tags?: string[];
  sort: keyof typeof SORT_COLUMNS;
  sortBy: 'ASC' | 'DESC';
  limit: number;
  page: number;
}

/** One page of the organization's accounts matching the filter, and how many match in all. */
export async function listOrganizationAccounts(db: Queryable, organizationId: number, filter: OrgAccountFilter) {
  const where: string[] = [];
  const params: unknown[] = [organizationId];
  if (filter.search !== undefined) {
    params.push(`%${escapeLike(filter.search)}%`);
    where.push(`(lower(a.email_address) LIKE $${params.length} OR lower(a.from_name) LIKE $${params.length})`);
  }
  if (filter.statuses) {
    params.push(filter.statuses);
    where.push(`a.status = ANY($${params.length}::text[])`);
  }
  if (filter.tags?.length) {
    params.push(filter.tags);
    where.push(`EXISTS (SELECT 1 FROM account_tags at JOIN tags t ON t.id = at.tag_id
                 WHERE at.account_id = a.id AND lower(t.name) = ANY($${params.length}::text[]))`);
  }
  const condition = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const [{ total }] = await db.query(`SELECT count(*)::int AS total FROM ${ORG_ACCOUNTS} ${condition}`, params);
  const rows = await db.query(
    `SELECT a.* FROM ${ORG_ACCOUNTS} ${condition}
      ORDER BY ${SORT_COLUMNS[filter.sort]} ${filter.sortBy}, a.id ${filter.sortBy}
      LIMIT ${filter.limit} OFFSET ${(filter.page - 1) * filter.limit}`,
    params,
  );
  return { rows, total: total as number };
}

/** A provider workspace of the organization whose workspace, if any, is live; null otherwise. */
export async function providerWorkspaceOf(
  db: Queryable,
  providerWorkspaceId: number,
  organizationId: number,
): Promise<{ id: number; workspace_id: number | null } | null> {
  const rows = await db.query(
    `SELECT p.id, p.workspace_id FROM provider_workspaces p LEFT JOIN workspaces w ON w.id = p.workspace_id
      WHERE p.id = $1 AND p.organization_id = $2 AND (p.workspace_id IS NULL OR w.deleted_at IS NULL)`,
    [providerWorkspaceId, organizationId],
  );
  return (rows[0] as { id: number; workspace_id: number | null } | undefined) ?? null;
}

/** The organization's oldest live workspace, or null. */
export async function oldestLiveWorkspace(db: Queryable, organizationId: number): Promise<number | null> {
  const rows = await db.query(
    `SELECT id FROM workspaces WHERE organization_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT 1`,
    [organizationId],
  );
  return rows[0]?.id ?? null;
}

/** A new SMTP/IMAP mailbox connected through /v1 (active, its check pending), as stored. */
export async function insertPartnerMailbox(
  db: Queryable,
  workspaceId: number,
  providerWorkspaceId: number | null,
  mailbox: NewMailbox,
): Promise<Row> {
  const { sealed } = mailbox;
  const rows = await db.query(
    `INSERT INTO accounts (workspace_id, email_address, from_name, provider, status, verification, warmup_max_limit, warmup_current_limit,
       time_zone, smtp, imap, smtp_password_sealed, imap_password_sealed, provider_workspace_id, last_connected_at, created_at, updated_at)
     VALUES ($1, $2, $3, 'smtp', 'active', 'pending', $4, 5, $5, $6::jsonb, $7::jsonb, $8, $9, $10, $11, $11, $11) RETURNING *`,
    [
      workspaceId,
      mailbox.emailAddress,
      mailbox.fromName,
      mailbox.warmupMaxLimit,
      mailbox.timeZone,
      sealed.smtp,
      sealed.imap,
      sealed.smtpPasswordSealed,
      sealed.imapPasswordSealed,
      providerWorkspaceId,
      mailbox.now,
    ],
  );
  return rows[0];
}

export async function deleteAccountsByIds(db: Queryable, accountIds: number[]): Promise<void> {
  if (accountIds.length) await db.query(`DELETE FROM accounts WHERE id = ANY($1::int[])`, [accountIds]);
}

/**
 * Adds the named tags to the accounts: a name unknown in an account's workspace is created there
 * first. The accounts' updated_at moves.
 */
export async function assignTagNames(
  db: Queryable,
  accounts: { id: number; workspace_id: number }[],
  names: string[],
): Promise<void> {
  for (const workspaceId of new Set(accounts.map((account) => account.workspace_id))) {
    for (const name of names) {
      await db.query(
        `INSERT INTO tags (workspace_id, name) VALUES ($1, $2) ON CONFLICT (workspace_id, lower(name)) DO NOTHING`,
        [workspaceId, name],
      );
    }
  }
  const accountIds = accounts.map((account) => account.id);
  await db.query(
    `INSERT INTO account_tags (account_id, tag_id)
     SELECT a.id, t.id FROM accounts a JOIN tags t ON t.workspace_id = a.workspace_id AND lower(t.name) = ANY($2::text[])
      WHERE a.id = ANY($1::int[])
     ON CONFLICT DO NOTHING`,
    [accountIds, names.map((name) => name.toLowerCase())],
  );
  await db.query(`UPDATE accounts SET updated_at = now() WHERE id = ANY($1::int[])`, [accountIds]);
}

/** Removes the named tags (lower case) from the accounts; the accounts' updated_at moves. */
export async function unassignTagNames(db: Queryable, accountIds: number[], lowerNames: string[]): Promise<void> {
  await db.query(
    `DELETE FROM account_tags at USING tags t
      WHERE t.id = at.tag_id AND at.account_id = ANY($1::int[]) AND lower(t.name) = ANY($2::text[])`,
    [accountIds, lowerNames],
  );
  await db.query(`UPDATE accounts SET updated_at = now() WHERE id = ANY($1::int[])`, [accountIds]);
}

/** As /v2's disconnect: warmup stops and no start is pending; the account and its history stay. */
export async function disconnectAccountById(db: Queryable, accountId: number, now: Date): Promise<Row> {
  const rows = await db.query(
    `UPDATE accounts SET status = 'disconnected', warmup_requested = false, auto_warmup = false, updated_at = $2 WHERE id = $1 RETURNING *`,
    [accountId, now],
  );
  return rows[0];
}

export async function deleteAccountById(db: Queryable, accountId: number): Promise<void> {
  await db.query(`DELETE FROM accounts WHERE id = $1`, [accountId]);
}

/** A mailbox of the seed file, its limits already decided. */
export interface SeedAccount {
  id: number;
  workspaceId: number;
  emailAddress: string;
  fromName: string;
  provider: string;
  status: string;
  verification: string;
  warmupMaxLimit: number;
  warmupCurrentLimit: number;
  replyRateCustom: number | null;
  timeZone: string;
}

/** Writes the seed's mailbox under its id, over any row of that id. */
export async function upsertSeedAccount(db: Queryable, account: SeedAccount): Promise<void> {
  await db.query(
    `INSERT INTO accounts (id, workspace_id, email_address, from_name, provider, status, verification, warmup_max_limit,
          warmup_current_limit, reply_rate_custom, time_zone, last_connected_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11, now())
        ON CONFLICT (id) DO UPDATE SET workspace_id=$2, email_address=$3, from_name=$4, provider=$5, status=$6, verification=$7,
          warmup_max_limit=$8, warmup_current_limit=$9, reply_rate_custom=$10, time_zone=$11, updated_at=now()`,
    [
      account.id,
      account.workspaceId,
      account.emailAddress,
      account.fromName,
      account.provider,
      account.status,
      account.verification,
      account.warmupMaxLimit,
      account.warmupCurrentLimit,
      account.replyRateCustom,
      account.timeZone,
    ],
  );
}

// The SQL of the /v2 account routes. Every query is scoped by the path workspace. Account loading
// and the record views are in store.ts.
import type { Queryable, Row } from '../../db/types.js';
import type { sealMailbox } from '../credentials/accounts.js';
import { ACCOUNT_COLUMNS } from './store.js';

export interface AccountFilter {
  status?: string;
  maxLimitMin?: number;
  maxLimitMax?: number;
  /** A tag id (digits) or a tag name (case-insensitive). */
  tag?: string;
  /** Matched anywhere in the address or the sender name. */
  search?: string;
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (special) => '\\' + special);
}

/** One page of the workspace's accounts matching the filter, and how many match in all. */
export async function listAccounts(db: Queryable, workspaceId: number, filter: AccountFilter, page: { limit: number; offset: number }) {
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
    [workspaceId, mailbox.emailAddress, mailbox.fromName, mailbox.warmupMaxLimit, mailbox.timeZone, sealed.smtp, sealed.imap,
      sealed.smtpPasswordSealed, sealed.imapPasswordSealed, mailbox.now],
  );
  return rows[0].id;
}

export async function accountsByIds(db: Queryable, workspaceId: number, accountIds: number[]): Promise<Row[]> {
  return db.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.workspace_id = $1 AND a.id = ANY($2::int[])`, [workspaceId, accountIds]);
}

/** The ids among `accountIds` of the workspace's accounts, locked until the transaction ends, in id order. */
export async function lockAccountIds(q: Queryable, workspaceId: number, accountIds: number[]): Promise<number[]> {
  const rows = await q.query(`SELECT id FROM accounts WHERE workspace_id = $1 AND id = ANY($2::int[]) ORDER BY id FOR UPDATE`, [workspaceId, accountIds]);
  return rows.map((row) => row.id as number);
}

/** Deletes the account; its address, or null when the workspace has no such account. */
export async function deleteAccount(db: Queryable, workspaceId: number, accountId: number): Promise<string | null> {
  const rows = await db.query(`DELETE FROM accounts WHERE id = $1 AND workspace_id = $2 RETURNING id, email_address`, [accountId, workspaceId]);
  return rows[0]?.email_address ?? null;
}

/** Disconnects the account; false when the workspace has no such account. */
export async function disconnectAccount(db: Queryable, workspaceId: number, accountId: number, now: Date): Promise<boolean> {
  const rows = await db.query(
    // A disconnected mailbox keeps no credential: its OAuth token is dropped (the refresh job skips it).
    `UPDATE accounts SET status = 'disconnected', warmup_requested = false, auto_warmup = false,
       oauth_access_token_sealed = NULL, oauth_expires_at = NULL, updated_at = $3
     WHERE id = $1 AND workspace_id = $2 RETURNING id`,
    [accountId, workspaceId, now],
  );
  return rows.length > 0;
}

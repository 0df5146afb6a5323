// The SQL of the mailbox rules both accounts and warmup apply: reading an account (of a workspace, or of
// an organization for /v1), settling lowered limits that are due, the warmup sends behind the scores,
// and the stored DNS check. Passwords are stripped in SQL (`smtp - 'password'`), so no read path holds them.
import type { Queryable, Row } from '../../db/types.js';
import type { DomainChecks } from '../dns/index.js';

/** The columns of an account read, with its tags; `a` is the accounts alias. */
export const ACCOUNT_COLUMNS = `a.id, a.workspace_id, a.email_address, a.from_name, a.provider, a.status, a.verification,
  a.warmup_requested, a.auto_warmup, a.warmup_max_limit, a.warmup_current_limit, a.pending_max_limit, a.pending_effective_at,
  a.reply_rate_custom, a.time_zone, a.smtp - 'password' AS smtp, a.imap - 'password' AS imap, a.connection_error,
  a.last_connected_at, a.verification_checked_at, a.warmup_started_at, a.created_at, a.updated_at,
  COALESCE((SELECT json_agg(json_build_object('id', t.id, 'name', t.name) ORDER BY t.id)
    FROM account_tags x JOIN tags t ON t.id = x.tag_id WHERE x.account_id = a.id), '[]'::json) AS tags`;

/** Accounts of live workspaces of the organization: `a` is accounts, `w` its workspace. */
export const ORG_ACCOUNTS = `accounts a JOIN workspaces w ON w.id = a.workspace_id AND w.deleted_at IS NULL AND w.organization_id = $1`;

/**
 * A lowered max whose local midnight has passed is in force even if the job has not run yet: reads
 * and writes settle the workspace's due limits first (cheap: a partial index on due rows).
 */
export async function settleDueLimits(
  db: Queryable,
  now: Date,
  where: { workspaceId?: number; accountId?: number } = {},
): Promise<number[]> {
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

/** One account of the workspace with its tags, or undefined (an account of another workspace is not there). */
export async function accountOfWorkspace(
  db: Queryable,
  workspaceId: number,
  accountId: number,
  lock = false,
): Promise<Row | undefined> {
  const rows = await db.query(
    `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = $1 AND a.workspace_id = $2 ${lock ? 'FOR UPDATE OF a' : ''}`,
    [accountId, workspaceId],
  );
  return rows[0];
}

/** An account by id alone (internal routes), or null. */
export async function getAccountById(db: Queryable, accountId: number, lock = false): Promise<Row | null> {
  const rows = await db.query(
    `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = $1 ${lock ? 'FOR UPDATE OF a' : ''}`,
    [accountId],
  );
  return rows[0] ?? null;
}

/** The whole rows of those of `ids` that are the organization's, by id. `lock` takes FOR UPDATE. */
export async function orgAccountRows(db: Queryable, orgId: number, ids: number[], lock = false): Promise<Row[]> {
  if (!ids.length) return [];
  return db.query(
    `SELECT a.* FROM ${ORG_ACCOUNTS} WHERE a.id = ANY($2::int[]) ORDER BY a.id${lock ? ' FOR UPDATE OF a' : ''}`,
    [orgId, ids],
  );
}

/** Warmup sends and those that reached the inbox, per account, in (since, until]. */
export async function warmupSendCounts(db: Queryable, accountIds: number[], since: Date, until: Date): Promise<Row[]> {
  return db.query(
    `SELECT account_id, count(*)::int AS sent, count(*) FILTER (WHERE outcome = 'inbox')::int AS inbox
       FROM warmup_messages WHERE account_id = ANY($1::int[]) AND sent_at > $2 AND sent_at <= $3 GROUP BY account_id`,
    [accountIds, since, until],
  );
}

/** Tag names per account, each account's in name order. */
export async function tagNamesOf(db: Queryable, accountIds: number[]): Promise<Row[]> {
  return db.query(
    `SELECT at.account_id, t.name FROM account_tags at JOIN tags t ON t.id = at.tag_id
      WHERE at.account_id = ANY($1::int[]) ORDER BY lower(t.name), t.id`,
    [accountIds],
  );
}

/** The cached setup scores of the accounts that have one. */
export async function cachedSetupScores(db: Queryable, accountIds: number[]): Promise<Row[]> {
  return db.query(`SELECT account_id, score FROM v1_setup_scores WHERE account_id = ANY($1::int[])`, [accountIds]);
}

/** The account's last DNS check, replacing the one before. */
export async function storeDnsCheck(
  db: Queryable,
  accountId: number,
  checks: DomainChecks,
  checkedAt: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO account_dns_checks (account_id, domain, spf, dkim, dmarc, mx, checked_at) VALUES ($1,$2,$3,$4,$5,$6,$7)
     ON CONFLICT (account_id) DO UPDATE SET domain=$2, spf=$3, dkim=$4, dmarc=$5, mx=$6, checked_at=$7`,
    [accountId, checks.domain, checks.spf, checks.dkim, checks.dmarc, checks.mx, checkedAt],
  );
}

// The SQL of the credentials at rest: the sealed columns of `accounts` (read for the mailbox workers,
// walked and rewritten by the checks and the re-seal at start) and the recorded check value of each key
// id. Rows come back keyed by credential field, so no column name leaves this file.
import type { Queryable } from '../../db/types.js';
import type { CredentialField } from './cipher.js';

const SEALED_COLUMN: Record<CredentialField, string> = {
  smtp_password: 'smtp_password_sealed',
  imap_password: 'imap_password_sealed',
  oauth_access_token: 'oauth_access_token_sealed',
};
/** Every credential a mailbox may hold, in the order of their columns. */
export const CREDENTIAL_FIELDS = Object.keys(SEALED_COLUMN) as CredentialField[];
const SEALED_COLUMNS = CREDENTIAL_FIELDS.map((field) => SEALED_COLUMN[field]).join(', ');

/** Each credential of a mailbox as stored: sealed, or null when the mailbox has none. */
export type SealedCredentials = Record<CredentialField, string | null>;

function sealedOf(row: Record<string, unknown>): SealedCredentials {
  return Object.fromEntries(
    CREDENTIAL_FIELDS.map((field) => [field, row[SEALED_COLUMN[field]] as string | null]),
  ) as SealedCredentials;
}

/** The key id a sealed value names (its second dot-separated part), compared in SQL. */
function keyIdOfColumn(field: CredentialField): string {
  return `split_part(${SEALED_COLUMN[field]}, '.', 2)`;
}

/** The account's sealed credentials, or null when there is no such account. */
export async function sealedCredentialsOf(db: Queryable, accountId: number): Promise<SealedCredentials | null> {
  const rows = await db.query(`SELECT ${SEALED_COLUMNS} FROM accounts WHERE id = $1`, [accountId]);
  return rows.length ? sealedOf(rows[0]) : null;
}

/** Marks the mailbox `error` (a disconnected one stays disconnected) with the connection error given. */
export async function markCredentialsAltered(
  db: Queryable,
  accountId: number,
  connectionError: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE accounts SET status = CASE WHEN status = 'disconnected' THEN status ELSE 'error' END, connection_error = $2, updated_at = $3 WHERE id = $1`,
    [accountId, connectionError, now],
  );
}

export interface CredentialsToReseal {
  id: number;
  sealed: SealedCredentials;
  /** What the migration to sealed columns left in the clear, by field; null when nothing. */
  plaintext: Partial<Record<CredentialField, unknown>> | null;
}

/**
 * The next `limit` accounts after `afterId`, in id order, holding plaintext credentials or a value not
 * sealed under `currentKeyId`; locked until the transaction ends, rows locked by another start skipped.
 */
export async function lockCredentialsToReseal(
  db: Queryable,
  afterId: number,
  currentKeyId: string,
  limit: number,
): Promise<CredentialsToReseal[]> {
  const stale = CREDENTIAL_FIELDS.map((field) => `${keyIdOfColumn(field)} <> $2`).join(' OR ');
  const rows = await db.query(
    `SELECT id, ${SEALED_COLUMNS}, credentials_plaintext FROM accounts
      WHERE id > $1 AND (credentials_plaintext IS NOT NULL OR ${stale})
      ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`,
    [afterId, currentKeyId, limit],
  );
  return rows.map((row) => ({ id: row.id, sealed: sealedOf(row), plaintext: row.credentials_plaintext }));
}

/** Writes every sealed credential of the account and clears its plaintext. */
export async function storeResealedCredentials(
  db: Queryable,
  accountId: number,
  sealed: SealedCredentials,
): Promise<void> {
  await db.query(
    `UPDATE accounts SET ${CREDENTIAL_FIELDS.map((field, i) => `${SEALED_COLUMN[field]} = $${i + 2}`).join(', ')}, credentials_plaintext = NULL WHERE id = $1`,
    [accountId, ...CREDENTIAL_FIELDS.map((field) => sealed[field])],
  );
}

/** The next `limit` accounts after `afterId`, in id order, with a value sealed under `keyId`. */
export async function credentialsUnderKey(
  db: Queryable,
  keyId: string,
  afterId: number,
  limit: number,
): Promise<{ id: number; sealed: SealedCredentials }[]> {
  const rows = await db.query(
    `SELECT id, ${SEALED_COLUMNS} FROM accounts
      WHERE id > $1 AND (${CREDENTIAL_FIELDS.map((field) => `${keyIdOfColumn(field)} = $2`).join(' OR ')})
      ORDER BY id LIMIT $3`,
    [afterId, keyId, limit],
  );
  return rows.map((row) => ({ id: row.id, sealed: sealedOf(row) }));
}

/** The check value recorded for each key id. */
export async function recordedKeyChecks(db: Queryable): Promise<Map<string, string>> {
  const rows = await db.query<{ key_id: string; check_value: string }>(
    `SELECT key_id, check_value FROM credential_key_checks`,
  );
  return new Map(rows.map((row) => [row.key_id, row.check_value]));
}

/** Records the key id's check value unless one is recorded already (the first start to prove it wins). */
export async function recordKeyCheck(db: Queryable, keyId: string, checkValue: string): Promise<void> {
  await db.query(
    `INSERT INTO credential_key_checks (key_id, check_value) VALUES ($1, $2) ON CONFLICT (key_id) DO NOTHING`,
    [keyId, checkValue],
  );
}

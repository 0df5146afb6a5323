// The credentials of `accounts` at rest (docs/workspace-api.md, "Credentials at rest"): SMTP/IMAP passwords and the
// OAuth access token live only in the *_sealed columns, sealed by CredentialCipher; the connection
// settings beside them (host, port, username, secure) stay readable. This module is where they are
// sealed for writing, read back for the mailbox workers, and resealed at start: plaintext left by the
// migration to sealed columns, and values under a key that is no longer the current one.
import type { Logger } from 'pino';
import type { Db, Queryable } from '../../db/index.js';
import type { Clock } from '../../ops/clock.js';
import { ConfigError } from '../../config/errors.js';
import { localCredentialKeys, parseCredentialKeys, type CredentialKeyring } from '../../config/credential-keys.js';
import { CredentialCipher, CredentialError, type CredentialField } from './cipher.js';
import { checkCredentialKeys } from './key-checks.js';
import {
  CREDENTIAL_FIELDS,
  lockCredentialsToReseal,
  markCredentialsAltered,
  sealedCredentialsOf,
  storeResealedCredentials,
  type CredentialsToReseal,
  type SealedCredentials,
} from './queries.js';

/** Rows resealed per transaction at start. */
const BATCH = 200;

interface CredentialServices {
  db: Db;
  credentials: CredentialCipher;
  log: Logger;
  clock: Clock;
}

/**
 * An SMTP and an IMAP server of a connect body, ready for the INSERT: the settings as JSON without
 * the password (accounts.smtp, accounts.imap), and each password sealed.
 */
export function sealMailbox<T extends { password: string }>(cipher: CredentialCipher, smtp: T, imap: T) {
  const { password: smtpPassword, ...smtpSettings } = smtp;
  const { password: imapPassword, ...imapSettings } = imap;
  return {
    smtp: JSON.stringify(smtpSettings),
    imap: JSON.stringify(imapSettings),
    smtpPasswordSealed: cipher.seal('smtp_password', smtpPassword),
    imapPasswordSealed: cipher.seal('imap_password', imapPassword),
  };
}

export interface AccountCredentials {
  smtpPassword: string | null;
  imapPassword: string | null;
  oauthAccessToken: string | null;
}

/**
 * The one read path of a mailbox's credentials in the clear, for whatever logs in to the mailbox.
 * An altered value marks the mailbox `error` (with a connection error saying to reconnect it) and
 * throws CredentialError; a value under a key missing from CREDENTIAL_KEYS throws without marking
 * anything (the configuration is at fault, not the mailbox).
 */
export async function accountCredentials(svc: CredentialServices, accountId: number): Promise<AccountCredentials> {
  const stored = await sealedCredentialsOf(svc.db, accountId);
  if (!stored) throw new Error(`No account ${accountId}.`);
  const open = (field: CredentialField): string | null => {
    const sealed = stored[field];
    return sealed === null ? null : svc.credentials.open(field, sealed);
  };
  try {
    return {
      smtpPassword: open('smtp_password'),
      imapPassword: open('imap_password'),
      oauthAccessToken: open('oauth_access_token'),
    };
  } catch (err) {
    if (err instanceof CredentialError && err.reason === 'integrity') await markAltered(svc, svc.db, accountId, err);
    throw err;
  }
}

async function markAltered(
  svc: CredentialServices,
  db: Queryable,
  accountId: number,
  err: CredentialError,
): Promise<void> {
  svc.log.warn(
    { accountId, field: err.field },
    'a stored credential failed its integrity check: the mailbox is marked error',
  );
  await markCredentialsAltered(
    db,
    accountId,
    `${err.message.replace(/\.$/, '')}; reconnect the mailbox.`,
    new Date(svc.clock.now()),
  );
}

export interface ResealReport {
  /** Plaintext values (from before the sealed columns) sealed now. */
  sealed: number;
  /** Values moved from an older key to the current one. */
  resealed: number;
  /** Accounts with an altered value (marked `error`). */
  altered: number[];
  /** Values left as they are because their key is not in the ring, by key id. */
  unknownKeys: Record<string, number>;
}

/**
 * Seal what the migration left in plaintext and reseal every value not under the current key; run at
 * every backend start, under row locks that concurrent starts skip. Idempotent: a second run finds
 * nothing to do.
 */
export async function resealCredentials(svc: CredentialServices): Promise<ResealReport> {
  const cipher = svc.credentials;
  const report: ResealReport = { sealed: 0, resealed: 0, altered: [], unknownKeys: {} };
  for (let after = 0; ;) {
    const last = await svc.db.tx(async (tx) => {
      const rows = await lockCredentialsToReseal(tx, after, cipher.currentKeyId, BATCH);
      for (const row of rows) {
        const next = {} as SealedCredentials;
        for (const field of CREDENTIAL_FIELDS) next[field] = await resealed(svc, tx, row, field, report);
        // Values under a key that is not in the ring (or altered) stay as they are: nothing to write.
        if (row.plaintext === null && CREDENTIAL_FIELDS.every((field) => next[field] === row.sealed[field])) continue;
        await storeResealedCredentials(tx, row.id, next);
      }
      return rows.length ? rows[rows.length - 1].id : null;
    });
    if (last === null) break;
    after = last;
  }
  const unknown = Object.keys(report.unknownKeys);
  if (unknown.length) {
    svc.log.warn(
      { keyIds: unknown, values: Object.values(report.unknownKeys).reduce((a, b) => a + b, 0) },
      'stored credentials are sealed under keys not in CREDENTIAL_KEYS: they cannot be read until those keys are back in the ring',
    );
  }
  if (report.sealed || report.resealed) {
    svc.log.info(
      { credentialKeyId: cipher.currentKeyId, sealed: report.sealed, resealed: report.resealed },
      'stored credentials sealed under the current key',
    );
  }
  return report;
}

/** The value `field` of `row` should hold: sealed from plaintext, moved to the current key, or as it is. */
async function resealed(
  svc: CredentialServices,
  db: Queryable,
  row: CredentialsToReseal,
  field: CredentialField,
  report: ResealReport,
): Promise<string | null> {
  const cipher = svc.credentials;
  const plain = row.plaintext?.[field];
  if (typeof plain === 'string') {
    report.sealed++;
    return cipher.seal(field, plain);
  }
  const sealed = row.sealed[field];
  if (sealed === null || cipher.isCurrent(sealed)) return sealed;
  try {
    const value = cipher.seal(field, cipher.open(field, sealed));
    report.resealed++;
    return value;
  } catch (err) {
    if (!(err instanceof CredentialError)) throw err;
    if (err.reason === 'unknown_key') {
      const id = cipher.keyIdOf(sealed)!;
      report.unknownKeys[id] = (report.unknownKeys[id] ?? 0) + 1;
    } else {
      report.altered.push(row.id);
      await markAltered(svc, db, row.id, err);
    }
    // Left as found: readable again once its key is back, or evidence of what was altered.
    return sealed;
  }
}

/**
 * The cipher of a backend start: CREDENTIAL_KEYS when set (loadSettings requires it of `npm run
 * backend`), else the key file in DATA_DIR, or a key of this process for a `memory://` database.
 * Then the keys are checked against the database (./key-checks.ts: a key id's bytes never change) and
 * every stored value is brought under the current key before the backend answers a request.
 */
export async function openCredentials(options: {
  db: Db;
  log: Logger;
  clock: Clock;
  keys?: string;
  dataDir: string;
}): Promise<CredentialCipher> {
  let keyring: CredentialKeyring;
  let source: string;
  if (options.keys) {
    try {
      keyring = parseCredentialKeys(options.keys);
    } catch (err) {
      throw new ConfigError(`setting CREDENTIAL_KEYS: ${(err as Error).message}`);
    }
    source = 'CREDENTIAL_KEYS';
  } else {
    const local = localCredentialKeys(options.dataDir);
    keyring = local.keyring;
    source =
      local.source === 'memory'
        ? 'a key of this process (DATA_DIR is memory://)'
        : `${local.source === 'created' ? 'created ' : ''}key file ${local.file}`;
  }
  const credentials = new CredentialCipher(keyring);
  // Every key is proved against the database before anything is sealed or re-sealed under it.
  await checkCredentialKeys(options.db, credentials);
  options.log.info(
    { credentialKeyId: credentials.currentKeyId, keyIds: credentials.keyIds, source },
    'credential keys loaded',
  );
  await resealCredentials({ db: options.db, log: options.log, clock: options.clock, credentials });
  return credentials;
}

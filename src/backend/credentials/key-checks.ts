// Proving CREDENTIAL_KEYS against the database before anything is sealed or re-sealed (docs/workspace-api.md,
// "Credentials at rest"). A key id names bytes for good: once a start has proved a key (its values
// open, or nothing was sealed under it yet and it is the current key), its check value is recorded in
// credential_key_checks, and a later start that holds other bytes under that id stops with exit 2.
// Before a value is recorded (a database from before migration 050) the stored values are the
// evidence: a key under which values are stored and none opens is the wrong key.
//
// Why it matters: a wrong current key would seal new values that the right key cannot open, and a
// wrong old key would make the re-seal at start mark every mailbox altered; a mistyped new key, once
// recorded, keeps its values readable because the "corrected" key is refused instead of trusted.
import type { Db } from '../../db/index.js';
import { ConfigError } from '../../config/errors.js';
import { type CredentialCipher, CredentialError } from './cipher.js';
import { CREDENTIAL_FIELDS, credentialsUnderKey, recordKeyCheck, recordedKeyChecks } from './queries.js';

const BATCH = 200;

/** What a key id proved against the stored values when no check value was recorded for it. */
type Evidence = 'opens' | 'fails' | 'none';

/**
 * Throws ConfigError naming CREDENTIAL_KEYS and the key ids whose bytes are not the ones the database
 * knows; otherwise records the check value of every key proved now. Nothing is written before every
 * key of the ring is judged.
 */
export async function checkCredentialKeys(db: Db, cipher: CredentialCipher): Promise<void> {
  const recorded = await recordedKeyChecks(db);
  const wrong: string[] = [];
  const proved: string[] = [];
  for (const id of cipher.keyIds) {
    const known = recorded.get(id);
    if (known !== undefined) {
      if (known !== cipher.checkValue(id)) wrong.push(id);
      continue;
    }
    const evidence = await evidenceFor(db, cipher, id);
    if (evidence === 'fails') wrong.push(id);
    // The current key seals from now on: it is proved by what it will seal. An old key that opens
    // nothing proves nothing and stays unrecorded (a later start may bring the right bytes).
    else if (evidence === 'opens' || id === cipher.currentKeyId) proved.push(id);
  }
  if (wrong.length) throw mismatch(wrong);
  for (const id of proved) await recordKeyCheck(db, id, cipher.checkValue(id));
  // Two first starts racing with different bytes under one id: the one whose value is not recorded stops.
  const now = await recordedKeyChecks(db);
  const lost = proved.filter((id) => now.get(id) !== cipher.checkValue(id));
  if (lost.length) throw mismatch(lost);
}

function mismatch(ids: string[]): ConfigError {
  const which = ids.length === 1 ? `key ${ids[0]} does` : `keys ${ids.join(', ')} do`;
  return new ConfigError(
    `setting CREDENTIAL_KEYS: ${which} not match the key the stored credentials were sealed under (the check value in the database, ` +
      `or the stored values, say otherwise); nothing was sealed or re-sealed. Give the original bytes under that id; a new key needs a new id.`,
  );
}

/** Walk the values sealed under `id` until one opens; `fails` when some exist and none does. */
async function evidenceFor(db: Db, cipher: CredentialCipher, id: string): Promise<Evidence> {
  let seen = false;
  for (let after = 0; ;) {
    const rows = await credentialsUnderKey(db, id, after, BATCH);
    if (rows.length === 0) return seen ? 'fails' : 'none';
    for (const row of rows) {
      for (const field of CREDENTIAL_FIELDS) {
        const sealed = row.sealed[field];
        if (sealed === null || cipher.keyIdOf(sealed) !== id) continue;
        seen = true;
        try {
          cipher.open(field, sealed);
          return 'opens';
        } catch (err) {
          if (!(err instanceof CredentialError)) throw err;
        }
      }
    }
    after = rows[rows.length - 1].id;
  }
}

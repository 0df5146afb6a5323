// CREDENTIAL_KEYS: the keys that seal the mailbox passwords and OAuth tokens the backend stores
// (docs/workspace-api.md, "Credentials at rest"). Comma-separated `id:base64key` entries of 32-byte keys, the first
// being the one new values are sealed under; the others only read older values. Messages name the
// entry and the key id, never the key material.
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ConfigError } from './errors.js';

export interface CredentialKeyring {
  /** The key new values are sealed under (the first entry). */
  currentId: string;
  /** Every key, by id, in the order given. */
  keys: ReadonlyMap<string, Buffer>;
}

/** A key id goes into every sealed value (`kgc1.<id>....`), so it may not hold the separator. */
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
/** 32 bytes in base64 or base64url, padded or not: 43 characters and an optional `=`. */
const BASE64_32 = /^[A-Za-z0-9+/_-]{43}=?$/;

/** Parse the setting's text; throws Error with a message naming the entry or key id (never the key). */
export function parseCredentialKeys(text: string): CredentialKeyring {
  const entries = text.split(',').map((e) => e.trim());
  if (entries.length === 1 && entries[0] === '') throw new Error('must hold at least one id:base64key entry');
  const keys = new Map<string, Buffer>();
  entries.forEach((entry, i) => {
    if (!entry) throw new Error(`entry ${i + 1} is empty`);
    const colon = entry.indexOf(':');
    if (colon === -1) throw new Error(`entry ${i + 1}: must be id:base64key`);
    const id = entry.slice(0, colon);
    const text64 = entry.slice(colon + 1);
    if (!KEY_ID.test(id)) throw new Error(`entry ${i + 1}: the key id must be 1 to 32 of [A-Za-z0-9_-]`);
    const key = Buffer.from(text64.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    // Node's decoder skips what it cannot read: only a canonical 43-character text is taken as 32 bytes.
    const canonical =
      key.toString('base64').replace(/=+$/, '') === text64.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
    if (!BASE64_32.test(text64) || !canonical || key.length !== 32) {
      throw new Error(
        `key ${id}: must be 32 bytes of base64 (got ${canonical ? key.length : 'text that is not base64'})`,
      );
    }
    if (key.every((b) => b === key[0]))
      throw new Error(`key ${id}: every byte is the same, a placeholder rather than a random key`);
    if (keys.has(id)) throw new Error(`key id ${id} appears twice`);
    for (const [other, k] of keys) if (k.equals(key)) throw new Error(`keys ${other} and ${id} are the same key`);
    keys.set(id, key);
  });
  return { currentId: entries[0].slice(0, entries[0].indexOf(':')), keys };
}

/** A fresh setting value: one random key under a random id. */
export function generateCredentialKeys(): string {
  return `k${randomBytes(4).toString('hex')}:${randomBytes(32).toString('base64')}`;
}

/** The key file of an all-in-one start without CREDENTIAL_KEYS, inside DATA_DIR. */
export const CREDENTIAL_KEY_FILE = 'credential-keys';

export interface LocalKeys {
  keyring: CredentialKeyring;
  /** `created`: written at this start; `file`: read from DATA_DIR; `memory`: invented for this process. */
  source: 'created' | 'file' | 'memory';
  file?: string;
}

/**
 * All-in-one without CREDENTIAL_KEYS: the key lives beside the data, never in the database. A
 * persisted DATA_DIR gets a key file (mode 0600) at its first start and reads it at every later one;
 * a `memory://` database, thrown away at exit, gets a key of its own per start.
 */
export function localCredentialKeys(dataDir: string): LocalKeys {
  if (dataDir.startsWith('memory://'))
    return { keyring: parseCredentialKeys(generateCredentialKeys()), source: 'memory' };
  const file = join(dataDir, CREDENTIAL_KEY_FILE);
  const read = (): CredentialKeyring | null => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new ConfigError(`setting CREDENTIAL_KEYS (key file ${file}): ${(err as Error).message}`);
    }
    try {
      return parseCredentialKeys(text.trim());
    } catch (err) {
      throw new ConfigError(`setting CREDENTIAL_KEYS (key file ${file}): ${(err as Error).message}`);
    }
  };
  const found = read();
  if (found) return { keyring: found, source: 'file', file };
  // Written whole under a temporary name and linked into place: a start racing this one either
  // links first (and this one reads its key) or finds the complete file.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, generateCredentialKeys() + '\n', { mode: 0o600, flag: 'wx' });
  let created = true;
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    created = false;
  } finally {
    rmSync(tmp, { force: true });
  }
  return { keyring: read()!, source: created ? 'created' : 'file', file };
}

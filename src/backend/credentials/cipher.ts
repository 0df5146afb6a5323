// Sealing the credentials the backend stores (docs/workspace-api.md, "Credentials at rest"): AES-256-GCM from
// node:crypto, a random 96-bit nonce per value, the key id in clear beside the ciphertext so a value
// stays readable after the current key changes. The envelope is one text value:
//
//   kgc1.<key id>.<nonce>.<ciphertext>.<tag>        (the last three in base64url)
//
// The version, the key id and the field the value belongs to are authenticated data: an altered key
// id, or a value copied into another credential column, fails like altered ciphertext does.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { CredentialKeyring } from '../../config/credential-keys.js';

/** The credential columns of `accounts`, by the name of the secret they hold. */
export type CredentialField = 'smtp_password' | 'imap_password' | 'oauth_access_token';

const LABEL: Record<CredentialField, string> = {
  smtp_password: 'SMTP password',
  imap_password: 'IMAP password',
  oauth_access_token: 'OAuth access token',
};

const VERSION = 'kgc1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const B64URL = /^[A-Za-z0-9_-]*$/;

/**
 * A stored credential that cannot be read: `unknown_key` when CREDENTIAL_KEYS lacks the key it was
 * sealed under (a configuration problem), `integrity` when it was altered or is not an envelope.
 * The message names the field and the key id only.
 */
export class CredentialError extends Error {
  override name = 'CredentialError';
  constructor(
    readonly reason: 'unknown_key' | 'integrity',
    readonly field: CredentialField,
    message: string,
  ) {
    super(message);
  }
}

export class CredentialCipher {
  // Private fields: the keys never show in JSON.stringify, util.inspect or a logged object.
  readonly #keys: ReadonlyMap<string, Buffer>;
  readonly currentKeyId: string;

  constructor(keyring: CredentialKeyring) {
    this.#keys = keyring.keys;
    this.currentKeyId = keyring.currentId;
  }

  /** The ids of the keys this cipher can read, the current one first. */
  get keyIds(): string[] {
    return [...this.#keys.keys()];
  }

  seal(field: CredentialField, plaintext: string): string {
    const id = this.currentKeyId;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#keys.get(id)!, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(id, field));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [
      VERSION,
      id,
      nonce.toString('base64url'),
      ciphertext.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
    ].join('.');
  }

  open(field: CredentialField, sealed: string): string {
    const parts = sealed.split('.');
    const altered = () =>
      new CredentialError(
        'integrity',
        field,
        `The stored ${LABEL[field]} failed its integrity check: it was altered, or it is not a sealed value.`,
      );
    if (parts.length !== 5 || parts[0] !== VERSION || parts.slice(2).some((p) => !B64URL.test(p))) throw altered();
    const [, id, nonceText, ciphertextText, tagText] = parts;
    const key = this.#keys.get(id);
    if (!key)
      throw new CredentialError(
        'unknown_key',
        field,
        `The stored ${LABEL[field]} is sealed under key "${id}", which CREDENTIAL_KEYS does not hold.`,
      );
    const nonce = Buffer.from(nonceText, 'base64url');
    const tag = Buffer.from(tagText, 'base64url');
    if (nonce.length !== NONCE_BYTES || tag.length !== TAG_BYTES) throw altered();
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(id, field));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(Buffer.from(ciphertextText, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw altered();
    }
  }

  /**
   * The check value of key `id` (recorded per key id, src/backend/credentials/key-checks.ts): a keyed
   * hash of a fixed label, which proves the same bytes at the next start without revealing them.
   */
  checkValue(id: string): string {
    const key = this.#keys.get(id);
    if (!key) throw new Error(`no credential key ${id}`);
    return createHmac('sha256', key).update('keygate credential key check v1').digest('base64url');
  }

  /** The key id an envelope names, or null when the text is not one. */
  keyIdOf(sealed: string): string | null {
    const parts = sealed.split('.');
    return parts.length === 5 && parts[0] === VERSION ? parts[1] : null;
  }

  /** Sealed under the current key (nothing to reseal). */
  isCurrent(sealed: string): boolean {
    return this.keyIdOf(sealed) === this.currentKeyId;
  }

  toJSON() {
    return { cipher: 'aes-256-gcm', currentKeyId: this.currentKeyId, keyIds: this.keyIds };
  }

  toString() {
    return `CredentialCipher(aes-256-gcm, current key ${this.currentKeyId})`;
  }
}

function aad(keyId: string, field: CredentialField): Buffer {
  return Buffer.from(`${VERSION}.${keyId}.accounts.${field}`, 'utf8');
}

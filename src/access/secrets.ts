import { createHmac, randomBytes } from 'node:crypto';

export type KeyType = 'workspace' | 'personal' | 'partner';

/**
 * The type among `types` whose prefix the secret starts with, when the rest is 32 to 128 characters of
 * [A-Za-z0-9] (a profile's key types, docs/profiles.md); null otherwise.
 */
export function keyTypeIn(secret: string, types: readonly { name: string; prefix: string }[]): string | null {
  for (const t of types) {
    if (!secret.startsWith(t.prefix)) continue;
    const n = secret.length - t.prefix.length;
    return n >= 32 && n <= 128 && SECRET_BODY.test(secret.slice(t.prefix.length)) ? t.name : null;
  }
  return null;
}
const SECRET_BODY = /^[A-Za-z0-9]+$/;

/** The keyed hash stored instead of a secret (HMAC-SHA256 with the database's pepper). */
export function hashSecret(pepper: string, secret: string): string {
  return createHmac('sha256', pepper).update(secret).digest('hex');
}

const ALPHANUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A fresh secret of a key type: its prefix (a profile's, `key.types`) plus 40 random characters of [A-Za-z0-9]. */
export function generateSecret(prefix: string): string {
  return prefix + randomAlphanumeric(40);
}

export function randomAlphanumeric(n: number): string {
  const bytes = randomBytes(n * 2);
  let out = '';
  // Rejection sampling keeps the distribution uniform over 62 characters.
  for (let i = 0; i < bytes.length && out.length < n; i++) if (bytes[i] < 248) out += ALPHANUM[bytes[i] % 62];
  return out.length === n ? out : out + randomAlphanumeric(n - out.length);
}

/**
 * What a list may show of a secret: its key type's prefix and four characters of the random part. Without
 * the prefix, the prefix is taken to end at the last `_` (the random part has none), or else to be the
 * first 7 characters; the workspace API's hints stay their first 11 characters either way.
 */
export function hintOf(secret: string, prefix?: string): string {
  const end = prefix !== undefined && secret.startsWith(prefix) ? prefix.length : inferredPrefixLength(secret);
  return secret.slice(0, end + 4) + '…';
}

function inferredPrefixLength(secret: string): number {
  const underscore = secret.lastIndexOf('_');
  return underscore >= 0 ? underscore + 1 : 7;
}

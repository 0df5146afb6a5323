// The credential cipher (src/backend/credentials/cipher.ts): AES-256-GCM envelopes that carry their
// key id, bound to the field they hold, readable under every key of the ring, and refused (with a
// message that holds neither the value nor the key) once altered.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CredentialCipher, CredentialError } from '../../../src/backend/credentials/cipher.js';
import { parseCredentialKeys } from '../../../src/config/credential-keys.js';

const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');
const only1 = new CredentialCipher(parseCredentialKeys(`k1:${K1}`));
const rotated = new CredentialCipher(parseCredentialKeys(`k2:${K2},k1:${K1}`));
const SECRET = 'smtp-Pass-4f9b1c';

/** Flip one character of part `i` of an envelope (base64url stays base64url). */
function alter(sealed: string, i: number): string {
  const parts = sealed.split('.');
  const p = parts[i];
  const at = Math.floor(p.length / 2);
  parts[i] = p.slice(0, at) + (p[at] === 'A' ? 'B' : 'A') + p.slice(at + 1);
  return parts.join('.');
}

function failure(fn: () => unknown): CredentialError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CredentialError);
    return err as CredentialError;
  }
  throw new Error('expected a CredentialError');
}

describe('CredentialCipher', () => {
  it('seals to an envelope naming the current key and opens it again', () => {
    const sealed = only1.seal('smtp_password', SECRET);
    expect(sealed).toMatch(/^kgc1\.k1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(sealed).not.toContain(SECRET);
    expect(only1.open('smtp_password', sealed)).toBe(SECRET);
    expect(only1.keyIdOf(sealed)).toBe('k1');
  });

  it('uses a fresh nonce for every seal', () => {
    const a = only1.seal('imap_password', SECRET);
    const b = only1.seal('imap_password', SECRET);
    expect(a).not.toBe(b);
    expect(a.split('.')[2]).not.toBe(b.split('.')[2]);
  });

  it('keeps non-ASCII and long values intact', () => {
    const v = 'pässwörd-🔑-' + 'x'.repeat(8000);
    expect(only1.open('oauth_access_token', only1.seal('oauth_access_token', v))).toBe(v);
  });

  it('reads values sealed under an older key of the ring, and seals under the first key', () => {
    const old = only1.seal('oauth_access_token', SECRET);
    expect(rotated.open('oauth_access_token', old)).toBe(SECRET);
    expect(rotated.isCurrent(old)).toBe(false);
    const fresh = rotated.seal('oauth_access_token', SECRET);
    expect(rotated.keyIdOf(fresh)).toBe('k2');
    expect(rotated.isCurrent(fresh)).toBe(true);
  });

  it('refuses a value sealed under a key the ring does not hold, naming the key id', () => {
    const e = failure(() => only1.open('smtp_password', rotated.seal('smtp_password', SECRET)));
    expect(e.reason).toBe('unknown_key');
    expect(e.message).toContain('"k2"');
    expect(e.message).toContain('CREDENTIAL_KEYS');
  });

  it('detects an altered nonce, ciphertext, tag or key id', () => {
    const sealed = only1.seal('smtp_password', SECRET);
    for (const part of [2, 3, 4]) {
      const e = failure(() => only1.open('smtp_password', alter(sealed, part)));
      expect(e.reason, `part ${part}`).toBe('integrity');
      expect(e.message).toMatch(/SMTP password failed its integrity check/);
    }
    // The same key under another id: the id is authenticated too.
    const twin = new CredentialCipher(parseCredentialKeys(`k9:${K1}`));
    expect(failure(() => twin.open('smtp_password', sealed.replace('.k1.', '.k9.'))).reason).toBe('integrity');
  });

  it('binds a value to its field: an SMTP password cannot be read back as the OAuth token', () => {
    const sealed = only1.seal('smtp_password', SECRET);
    expect(failure(() => only1.open('oauth_access_token', sealed)).reason).toBe('integrity');
  });

  it('refuses plaintext and malformed envelopes as integrity failures', () => {
    for (const bad of [
      SECRET,
      '',
      'kgc1.k1',
      'kgc1.k1.a.b',
      'kgc2.k1.AAAAAAAAAAAAAAAA.AA.AAAAAAAAAAAAAAAAAAAAAA',
      'kgc1.k1.AAAA.AA.AAAAAAAAAAAAAAAAAAAAAA',
      'kgc1.k1.AAAAAAAAAAAAAAAA.A+A.AAAAAAAAAAAAAAAAAAAAAA',
    ]) {
      expect(failure(() => only1.open('imap_password', bad)).reason, bad).toBe('integrity');
    }
  });

  it('never puts the value or the key into an error, a log object or a string', () => {
    const sealed = only1.seal('smtp_password', SECRET);
    const e = failure(() => only1.open('smtp_password', alter(sealed, 3)));
    const shown = [
      e.message,
      String(e.stack),
      JSON.stringify(e),
      JSON.stringify(only1),
      String(only1),
      JSON.stringify({ svc: { credentials: only1 } }),
    ].join('\n');
    expect(shown).not.toContain(SECRET);
    expect(shown).not.toContain(K1);
    expect(shown).not.toContain(Buffer.from(K1, 'base64').toString('hex'));
    expect(JSON.stringify(only1)).toContain('k1');
  });
});

// CREDENTIAL_KEYS: strict parsing with one line naming the setting (never echoing a key), required by
// `npm run backend`, and the all-in-one fallback (a key file in DATA_DIR, or a key per start for memory://).
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';
import { ConfigError } from '../../src/config/errors.js';
import { CREDENTIAL_KEY_FILE, localCredentialKeys, parseCredentialKeys } from '../../src/config/credential-keys.js';

const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64url');
const base = {
  DATABASE_URL: 'postgres://x@127.0.0.1/db',
  GATEWAY_SECRET: 'g'.repeat(32),
  INTERNAL_TOKEN: 'i'.repeat(32),
};

function configError(env: Record<string, string>, mode: 'start' | 'backend' | 'gateway' = 'start'): string {
  try {
    loadSettings(env, mode);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('parseCredentialKeys', () => {
  it('reads id:base64key entries, the first being current (base64 or base64url, padded or not)', () => {
    const ring = parseCredentialKeys(` k2:${K2} , k1:${K1}`);
    expect(ring.currentId).toBe('k2');
    expect([...ring.keys.keys()]).toEqual(['k2', 'k1']);
    expect(ring.keys.get('k1')).toEqual(Buffer.from(K1, 'base64'));
    expect(ring.keys.get('k2')).toEqual(Buffer.from(K2, 'base64url'));
    expect(parseCredentialKeys(`a:${K1.replace(/=+$/, '')}`).keys.get('a')).toEqual(Buffer.from(K1, 'base64'));
  });

  it.each([
    ['', /at least one/],
    [`k1:${K1},`, /entry 2 is empty/],
    [K1, /entry 1: must be id:base64key/],
    [`k.1:${K1}`, /entry 1: the key id must be 1 to 32 of \[A-Za-z0-9_-\]/],
    [`k1:${randomBytes(16).toString('base64')}`, /key k1: must be 32 bytes of base64 \(got 16\)/],
    [`k1:${K1.slice(0, -2)}!=`, /key k1: must be 32 bytes of base64/],
    [`k1:${K1},k1:${K2}`, /key id k1 appears twice/],
    [`k1:${K1},k2:${K1}`, /keys k1 and k2 are the same key/],
    [`k1:${Buffer.alloc(32).toString('base64')}`, /key k1: .*placeholder/],
  ])('refuses %j', (text, message) => {
    expect(() => parseCredentialKeys(text)).toThrow(message);
  });
});

describe('loadSettings: CREDENTIAL_KEYS', () => {
  it('names the setting and never echoes the key material', () => {
    const bad = `k1:${K1.slice(0, 20)}`;
    const msg = configError({ ...base, CREDENTIAL_KEYS: bad });
    expect(msg).toMatch(/^setting CREDENTIAL_KEYS: key k1: must be 32 bytes of base64/);
    expect(msg).not.toContain(K1.slice(0, 20));
  });

  it('is required for `npm run backend`, not for the gateway alone or all-in-one', () => {
    expect(configError(base, 'backend')).toBe('setting CREDENTIAL_KEYS: required for `npm run backend`');
    expect(loadSettings(base, 'gateway').CREDENTIAL_KEYS).toBeUndefined();
    expect(loadSettings({}, 'start').CREDENTIAL_KEYS).toBeUndefined();
    expect(loadSettings({ ...base, CREDENTIAL_KEYS: `k1:${K1}` }, 'backend').CREDENTIAL_KEYS).toBe(`k1:${K1}`);
  });

  it('accepts a list in CONFIG_FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kg-ck-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ CREDENTIAL_KEYS: [`k2:${K2}`, `k1:${K1}`] }));
    expect(parseCredentialKeys(loadSettings({ CONFIG_FILE: file }).CREDENTIAL_KEYS!).currentId).toBe('k2');
    rmSync(dir, { recursive: true });
  });
});

describe('localCredentialKeys (all-in-one without CREDENTIAL_KEYS)', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('creates a key file readable by the owner only, and reads the same key at the next start', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kg-ck-')), 'data');
    dirs.push(dir);
    const first = localCredentialKeys(dir);
    expect(first.source).toBe('created');
    const file = join(dir, CREDENTIAL_KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(parseCredentialKeys(readFileSync(file, 'utf8').trim()).currentId).toBe(first.keyring.currentId);
    const again = localCredentialKeys(dir);
    expect(again.source).toBe('file');
    expect(again.keyring.keys.get(again.keyring.currentId)).toEqual(first.keyring.keys.get(first.keyring.currentId));
  });

  it('refuses a damaged key file with a line naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kg-ck-'));
    dirs.push(dir);
    writeFileSync(join(dir, CREDENTIAL_KEY_FILE), 'k1:short\n');
    expect(() => localCredentialKeys(dir)).toThrow(
      /^setting CREDENTIAL_KEYS \(key file .*credential-keys\): key k1: must be 32 bytes/,
    );
  });

  it('invents a key per start for a memory:// database (its data does not outlive the process either)', () => {
    const a = localCredentialKeys('memory://');
    const b = localCredentialKeys('memory://');
    expect(a.source).toBe('memory');
    expect(a.keyring.currentId).not.toBe(b.keyring.currentId);
  });
});

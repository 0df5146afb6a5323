// IDENTITY_JWT_KEYS: the private keys the gateway signs the identity JWT with (src/http/identity-jwt.ts),
// the first of which signs and all of which are published in the JWKS. Parsed with the settings, so a
// bad key stops the start with one line naming the entry (never the key material).
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';

export type JwtAlgorithm = 'EdDSA' | 'ES256';

export interface JwtKey {
  kid: string;
  alg: JwtAlgorithm;
  privateKey: KeyObject;
  /** The public half as published in the JWKS (kid, alg, use included). */
  publicJwk: JWK;
}

const KID = /^[A-Za-z0-9._:-]{1,128}$/;
const PEM_PKCS8 = /^-----BEGIN PRIVATE KEY-----[\s\S]+-----END PRIVATE KEY-----\s*$/;

/**
 * Parse IDENTITY_JWT_KEYS: JSON holding private keys, the first of which signs. Accepted shapes: a JWK
 * Set `{"keys":[jwk,...]}`, or an array whose entries are a private JWK with a `kid`, or
 * `{"kid":"...","pem":"-----BEGIN PRIVATE KEY-----..."}` (PKCS8). Keys must be Ed25519 (EdDSA) or
 * P-256 (ES256). Throws an Error whose message says which entry and why (never the key material).
 */
export function parseJwtKeys(text: string): JwtKey[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error('must be JSON: a JWK Set {"keys":[...]} or an array of private JWKs or {"kid","pem"} entries');
  }
  const entries = Array.isArray(doc)
    ? doc
    : isObject(doc) && Array.isArray(doc.keys) && Object.keys(doc).length === 1
      ? doc.keys
      : null;
  if (!entries) throw new Error('must be a JWK Set {"keys":[...]} or an array of keys');
  if (entries.length === 0) throw new Error('holds no key (the first key signs)');
  const keys = entries.map((e, i) => parseOneKey(e, i));
  const seen = new Set<string>();
  for (const k of keys) {
    if (seen.has(k.kid)) throw new Error(`duplicate kid ${k.kid}`);
    seen.add(k.kid);
  }
  return keys;
}

function parseOneKey(entry: unknown, i: number): JwtKey {
  const at = `key ${i}`;
  if (!isObject(entry)) throw new Error(`${at}: must be an object (a private JWK or {"kid","pem"})`);
  const kid = entry.kid;
  if (typeof kid !== 'string' || !KID.test(kid)) throw new Error(`${at}: kid is required, 1 to 128 of [A-Za-z0-9._:-]`);
  let privateKey: KeyObject;
  if ('pem' in entry) {
    const extra = Object.keys(entry).find((k) => k !== 'kid' && k !== 'pem');
    if (extra) throw new Error(`key ${kid}: unknown field ${extra} beside pem`);
    if (typeof entry.pem !== 'string' || !PEM_PKCS8.test(entry.pem.trim() + '\n')) {
      throw new Error(
        `key ${kid}: pem must be an unencrypted PKCS8 "BEGIN PRIVATE KEY" block (openssl pkcs8 -topk8 -nocrypt converts others)`,
      );
    }
    privateKey = tryKey(kid, () => createPrivateKey({ key: entry.pem as string, format: 'pem' }));
  } else {
    if (typeof entry.kty !== 'string') throw new Error(`key ${kid}: a JWK needs kty (or give a PKCS8 pem)`);
    if (typeof entry.d !== 'string') throw new Error(`key ${kid}: the JWK must be a private key (no "d")`);
    if (entry.use !== undefined && entry.use !== 'sig') throw new Error(`key ${kid}: use must be sig`);
    privateKey = tryKey(kid, () => createPrivateKey({ key: entry as never, format: 'jwk' }));
  }
  const alg = algorithmOf(privateKey);
  if (!alg) {
    const curve = privateKey.asymmetricKeyDetails?.namedCurve;
    throw new Error(
      `key ${kid}: must be Ed25519 (EdDSA) or P-256 (ES256), not ${privateKey.asymmetricKeyType}${curve ? ' ' + curve : ''}`,
    );
  }
  if (entry.alg !== undefined && entry.alg !== alg)
    throw new Error(`key ${kid}: alg ${String(entry.alg)} does not fit the key (${alg})`);
  const pub = createPublicKey(privateKey).export({ format: 'jwk' }) as JWK;
  return { kid, alg, privateKey, publicJwk: { ...pub, kid, alg, use: 'sig' } };
}

function tryKey(kid: string, make: () => KeyObject): KeyObject {
  try {
    return make();
  } catch {
    // The parser's own message may quote key bytes: say only that it did not parse.
    throw new Error(`key ${kid}: not a valid private key`);
  }
}

function algorithmOf(k: KeyObject): JwtAlgorithm | null {
  if (k.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (k.asymmetricKeyType === 'ec' && k.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  return null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A fresh Ed25519 key (all-in-one without IDENTITY_JWT_KEYS); its kid is its RFC 7638 thumbprint. */
export function generateJwtKey(): JwtKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pub = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = createHash('sha256')
    .update(JSON.stringify({ crv: pub.crv, kty: pub.kty, x: pub.x }))
    .digest('base64url');
  return { kid, alg: 'EdDSA', privateKey, publicJwk: { ...pub, kid, alg: 'EdDSA', use: 'sig' } };
}

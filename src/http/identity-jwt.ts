// The identity as a signed JWT (IDENTITY_FORMAT jwt|both): the same facts as the HMAC headers of
// docs/decisions.md section 5, verifiable by the upstream with any JOSE library and the public keys the
// admin port serves at /.well-known/jwks.json (src/ops/ops-server.ts). Verifier: src/verifier/index.ts.
//
// Signing is synchronous node:crypto over keys parsed once: bench/identity-jwt.ts measured about half
// the CPU of jose's SignJWT per token (which goes through WebCrypto's async jobs), and the forwarder
// need not await it; the tokens are plain compact JWS that jose's jwtVerify accepts
// (test/http/identity-jwt.test.ts). jose is what services verify with (src/verifier/index.ts).
import { createHash, randomUUID, sign as cryptoSign } from 'node:crypto';
import type { JWK } from 'jose';
import type { Identity } from './identity.js';
import { ConfigError } from '../config/errors.js';
import { generateJwtKey, type JwtKey } from '../config/jwt-keys.js';

export const JWT_ISSUER = 'keygate';
/**
 * Targets up to this many bytes travel in the token as `htu`; a longer one as `htd`, the base64url
 * SHA-256 of the target: the token then has the same size whatever the target's, and the forwarded
 * head carries a long target once (in the request line) instead of twice.
 */
export const HTU_MAX_BYTES = 512;

/** The `htd` claim of a target: base64url SHA-256 of its bytes. */
export function targetDigest(target: string): string {
  return createHash('sha256').update(target).digest('base64url');
}

/** Token lifetime: the same 60 s window as the HMAC timestamp (docs/decisions.md section 5). */
export const JWT_LIFETIME_SECONDS = 60;

export type JwtHeaderName = 'authorization' | 'x-gateway-jwt';

export interface JwtSignInput {
  identity: Identity;
  method: string;
  /** The forwarded request target, path and query, exactly as sent upstream. */
  target: string;
  requestId: string;
  /** The Content-Digest header value the gateway sends with a non-empty body (RFC 9530). */
  contentDigest?: string;
}

export interface JwtSigner {
  sign(input: JwtSignInput, nowMs: number): string;
  /** The JWKS document: every configured key's public half, the signing key first. */
  jwks(): { keys: JWK[] };
  /** The upstream request header that carries the token (lower case)... */
  header: JwtHeaderName;
  /** ...and its value for a token (`Bearer <jwt>` in Authorization, the bare token otherwise). */
  headerValue(token: string): string;
}

export function createJwtSigner(o: { keys: JwtKey[]; audience?: string; header?: JwtHeaderName }): JwtSigner {
  if (o.keys.length === 0) throw new Error('createJwtSigner: at least one key');
  const key = o.keys[0];
  // Everything that does not change per request is prepared once: the encoded protected header,
  // the signing options, the published document.
  const headerB64 = Buffer.from(JSON.stringify({ alg: key.alg, kid: key.kid, typ: 'JWT' })).toString('base64url');
  const signWith = key.alg === 'EdDSA' ? null : 'sha256';
  const signKey = key.alg === 'EdDSA' ? key.privateKey : { key: key.privateKey, dsaEncoding: 'ieee-p1363' as const };
  const document = { keys: o.keys.map((k) => k.publicJwk) };
  const header = o.header ?? 'x-gateway-jwt';
  return {
    header,
    headerValue: header === 'authorization' ? (token) => `Bearer ${token}` : (token) => token,
    jwks: () => document,
    sign(input, nowMs) {
      const iat = Math.floor(nowMs / 1000);
      const claims = {
        iss: JWT_ISSUER,
        ...(o.audience !== undefined ? { aud: o.audience } : {}),
        sub: `key:${input.identity.keyId}`,
        iat,
        exp: iat + JWT_LIFETIME_SECONDS,
        jti: randomUUID(),
        htm: input.method,
        ...(Buffer.byteLength(input.target) <= HTU_MAX_BYTES
          ? { htu: input.target }
          : { htd: targetDigest(input.target) }),
        ...(input.contentDigest !== undefined ? { cd: input.contentDigest } : {}),
        rid: input.requestId,
        kg: {
          keyId: input.identity.keyId,
          keyType: input.identity.keyType,
          organizationId: input.identity.organizationId,
          userId: input.identity.userId,
          workspaceId: input.identity.workspaceId,
          role: input.identity.role,
          scopes: input.identity.scopes,
          plan: input.identity.plan,
          ...(input.identity.metadata !== undefined ? { metadata: input.identity.metadata } : {}),
        },
      };
      const signingInput = `${headerB64}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      return `${signingInput}.${cryptoSign(signWith, Buffer.from(signingInput), signKey).toString('base64url')}`;
    },
  };
}

/**
 * The signer the settings ask for, or null when no JWT is configured. All-in-one (`start`) without
 * IDENTITY_JWT_KEYS signs with a key generated per start; a standalone gateway must be given keys
 * (every replica and every verifier's cached JWKS must agree).
 */
export function jwtSignerFromSettings(
  s: {
    IDENTITY_FORMAT: 'hmac' | 'jwt' | 'both';
    IDENTITY_JWT_KEYS?: JwtKey[];
    IDENTITY_JWT_AUDIENCE?: string;
    IDENTITY_JWT_HEADER: JwtHeaderName;
  },
  mode: 'start' | 'gateway' | 'backend',
): JwtSigner | null {
  let keys = s.IDENTITY_JWT_KEYS;
  if (!keys) {
    if (s.IDENTITY_FORMAT === 'hmac') return null;
    if (mode !== 'start')
      throw new ConfigError(
        `setting IDENTITY_JWT_KEYS: required when IDENTITY_FORMAT is ${s.IDENTITY_FORMAT} for \`npm run ${mode}\``,
      );
    keys = [generateJwtKey()];
  }
  return createJwtSigner({ keys, audience: s.IDENTITY_JWT_AUDIENCE, header: s.IDENTITY_JWT_HEADER });
}

// @keygate/verifier (packages/verifier builds and packs it): check, in your own Node service, the identity
// keygate's gateway forwards (docs/decisions.md section 5). Standalone on purpose: it depends on `jose`
// and node:crypto only, never on the rest of keygate, so a service can install it without the gateway.
// Other languages: the rules below and the vectors in test/vectors/identity-{hmac,jwt}.json.
//
// HMAC headers (IDENTITY_FORMAT hmac|both, shared secret GATEWAY_SECRET):
//   X-Gateway-Signature = hex HMAC-SHA256 over
//     timestamp \n requestId \n method \n target \n identity            (no body forwarded)
//     timestamp \n requestId \n method \n target \n identity \n digest  (a body: digest = the Content-Digest value)
//   where Content-Digest is `sha-256=:<base64 SHA-256 of the body>:` (RFC 9530).
//   A decision of keygate's decision service (forward-auth: nginx, Traefik, Envoy; it never sees the body)
//   signs `unsigned-body` in the digest's place and sends X-Gateway-Signature = `unsigned-body:<hex>`.
//   Such a request is accepted without a body; with one only when the verifier is given
//   `acceptUnsignedBody: true` (the signature then covers method, target and identity, not the body).
// JWT (IDENTITY_FORMAT jwt|both, public keys at http://<gateway>:ADMIN_PORT/.well-known/jwks.json):
//   EdDSA or ES256, iss "keygate", aud = IDENTITY_JWT_AUDIENCE (the verifier requires it unless told
//   `anyAudience: true`), 60 s lifetime (iat at most 60 s old and exp ahead, each with one 5 s clock
//   tolerance), jti a non-empty string, htm = method,
//   htu = request target (path and query) when it is at most 512 bytes, else htd = base64url
//   SHA-256 of the target (the token's size does not grow with the target's), cd = Content-Digest of the body when there is one
//   (`unsigned-body` for a decision of the decision service, as above),
//   kg = the identity.
// The identity's optional `metadata` is the key's JSON object as its operator set it (absent when none).
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors as joseErrors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
} from 'jose';

/**
 * What the gateway resolved for the request's key (docs/decisions.md section 5); keygate's own type, which its
 * gateway signs.
 */
export interface Identity {
  keyId: number;
  /**
   * The key's type: `workspace`, `personal` or `partner` on the workspace API; under another profile one of
   * its key types (`[a-z][a-z0-9_]{0,31}`).
   */
  keyType: string;
  organizationId: number;
  userId: number | null;
  workspaceId: number | null;
  role: string | null;
  scopes: string[];
  plan: string | null;
  /** The key's metadata as its operator set it (a JSON object); absent when the key has none. */
  metadata?: Record<string, unknown>;
}

export type VerificationFailure =
  | 'missing' // a required header or claim is absent
  | 'malformed' // present but not in the expected form
  | 'stale' // timestamp or token outside the 60 s window
  | 'bad_signature' // the signature does not match what was forwarded
  | 'digest_missing' // a body arrived without a signed digest
  | 'body_unsigned' // a body arrived under a decision's signature, made without it (see acceptUnsignedBody)
  | 'digest_mismatch' // the body is not the one that was signed
  | 'body_required' // a digest was signed but the caller passed no body to check it against
  | 'wrong_audience'
  | 'wrong_request' // the token was issued for another method or target
  | 'replayed'; // this signature or token was already accepted once

/** Every refusal: answer 401 and log `reason` (never the headers). */
export class IdentityVerificationError extends Error {
  override name = 'IdentityVerificationError';
  constructor(
    readonly reason: VerificationFailure,
    message: string,
  ) {
    super(message);
  }
}

/** Headers as Node gives them (`req.headers`) or as the Fetch API does (`Request.headers`). */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export interface ForwardedRequest {
  method: string;
  /** The request target exactly as received: path and query (`req.originalUrl` in express, `req.url` in node:http). */
  target: string;
  /** The raw body bytes. Required whenever the request has a body: the signature covers its digest. */
  body?: Buffer | Uint8Array | string;
}

/**
 * Remembers accepted signatures (HMAC) or token ids (JWT) until they expire. `firstSeen` returns true
 * the first time it is given an id and false after; with several replicas back it with a shared
 * store (Redis `SET id 1 NX PXAT expiresAtMs`).
 */
export interface ReplayCache {
  firstSeen(id: string, expiresAtMs: number): boolean | Promise<boolean>;
}

import { MAX_AGE_MS, UNSIGNED_BODY, contentDigest } from './digest.js';

export { MAX_AGE_MS, UNSIGNED_BODY, contentDigest };

export interface BodyOptions {
  /**
   * Accept a body under a signature keygate's decision service made without it (forward-auth: nginx's
   * auth_request, Traefik's ForwardAuth, Envoy's external authorization never show it the body). The
   * request's method, target and identity are still verified; its body is then the proxy's word alone,
   * so set this only where the path from the proxy to this service is trusted. Default false: such a
   * request is accepted only without a body, and the gateway's own signatures never depend on it.
   */
  acceptUnsignedBody?: boolean;
}

/** The string the gateway's HMAC signs (see the top of this file). */
export function hmacSigningString(p: {
  timestamp: string;
  requestId: string;
  method: string;
  target: string;
  identity: string;
  contentDigest?: string;
}): string {
  const base = `${p.timestamp}\n${p.requestId}\n${p.method}\n${p.target}\n${p.identity}`;
  return p.contentDigest === undefined ? base : `${base}\n${p.contentDigest}`;
}

/**
 * Verify the HMAC identity headers of a request forwarded by keygate; resolves to the identity or
 * rejects with IdentityVerificationError. Checks, in order: the headers are present and well formed,
 * the timestamp is within `maxAgeMs` of now (either way), the signature (constant-time), the body
 * against the signed Content-Digest, then the replay cache when one is given.
 */
export async function verifyHmacIdentity(
  secret: string,
  request: ForwardedRequest & { headers: HeaderSource },
  opts: { now?: () => number; maxAgeMs?: number; replay?: ReplayCache } & BodyOptions = {},
): Promise<Identity> {
  const signed = verifyHmacHeaders(secret, request, opts);
  const identity = verifySignedBody(signed, request.body, opts);
  if (opts.replay && !(await opts.replay.firstSeen(`hmac:${signed.signature}`, signed.expiresAtMs))) {
    throw new IdentityVerificationError('replayed', 'this signature was already used');
  }
  return identity;
}

/** What verifyHmacHeaders vouches for: the identity, and what the body and replay checks need. */
export interface SignedHmacHeaders {
  identity: Identity;
  signature: string;
  /** The signed Content-Digest value, when the request carries one. */
  contentDigest: string | undefined;
  /** The signature is a decision's, made without the body (`unsigned-body:<hex>`). */
  bodyUnsigned: boolean;
  /** When the signature stops being valid (its timestamp plus the maximum age). */
  expiresAtMs: number;
}

/**
 * The first half of verifyHmacIdentity, for a service that decides on the headers before it reads the
 * body (routing, size limits): presence and form, age, signature and identity. The identity is to be
 * trusted only once verifySignedBody has checked the body against it (and a replay check after that).
 */
export function verifyHmacHeaders(
  secret: string,
  request: { method: string; target: string; headers: HeaderSource },
  opts: { now?: () => number; maxAgeMs?: number } = {},
): SignedHmacHeaders {
  const h = request.headers;
  const identity = header(h, 'x-gateway-identity');
  const timestamp = header(h, 'x-gateway-timestamp');
  const signature = header(h, 'x-gateway-signature');
  const requestId = header(h, 'x-request-id');
  const digest = header(h, 'content-digest');
  if (!identity || !timestamp || !signature || !requestId) {
    throw new IdentityVerificationError('missing', 'the gateway identity headers are missing');
  }
  const mac = /^(unsigned-body:)?([0-9a-f]{64})$/.exec(signature);
  if (!/^\d{1,16}$/.test(timestamp) || !mac) {
    throw new IdentityVerificationError('malformed', 'the gateway identity headers are malformed');
  }
  // A decision's mark is signed in the digest's place: the mark cannot be added to, or cut from, a signature.
  const bodyUnsigned = mac[1] !== undefined;
  // Only a marked signature signs the mark (and a Content-Digest never takes that form).
  if (!bodyUnsigned && digest === UNSIGNED_BODY)
    throw new IdentityVerificationError('malformed', 'the gateway identity headers are malformed');
  const now = (opts.now ?? Date.now)();
  const maxAge = opts.maxAgeMs ?? MAX_AGE_MS;
  if (Math.abs(now - Number(timestamp)) > maxAge)
    throw new IdentityVerificationError('stale', 'the identity timestamp is outside the allowed window');
  const expected = createHmac('sha256', secret)
    .update(
      hmacSigningString({
        timestamp,
        requestId,
        method: request.method,
        target: request.target,
        identity,
        contentDigest: bodyUnsigned ? UNSIGNED_BODY : digest,
      }),
    )
    .digest();
  if (!timingSafeEqual(expected, Buffer.from(mac[2], 'hex')))
    throw new IdentityVerificationError('bad_signature', 'the identity signature does not match');
  return {
    identity: decodeIdentity(() => JSON.parse(Buffer.from(identity, 'base64url').toString('utf8'))),
    signature,
    contentDigest: bodyUnsigned ? undefined : digest,
    bodyUnsigned,
    expiresAtMs: Number(timestamp) + maxAge,
  };
}

/** The second half: the body is the one the headers signed (no digest, no body); then the identity holds. */
export function verifySignedBody(
  signed: SignedHmacHeaders,
  body: ForwardedRequest['body'],
  opts: BodyOptions = {},
): Identity {
  checkBody(signed.bodyUnsigned ? UNSIGNED_BODY : signed.contentDigest, body, opts);
  return signed.identity;
}

export interface JwtVerifierOptions extends BodyOptions {
  /** The gateway's JWKS, e.g. `http://gateway:9090/.well-known/jwks.json` (fetched and cached by jose)... */
  jwksUrl?: string | URL;
  /** ...or the JWKS document itself. */
  jwks?: JSONWebKeySet;
  /**
   * This service's name, as the gateway's IDENTITY_JWT_AUDIENCE: the `aud` claim must equal it, so a
   * token forwarded to another service behind the same gateway is refused here. Required...
   */
  audience?: string;
  /**
   * ...unless this is true: any `aud` (or none) is accepted. Only for a gateway that fronts this one
   * service alone; with several, a request authorized for one of them could be replayed to another
   * within the token's minute.
   */
  anyAudience?: boolean;
  /** Where the token travels: IDENTITY_JWT_HEADER of the gateway (default `x-gateway-jwt`). */
  header?: 'authorization' | 'x-gateway-jwt';
  /** Tests: the clock. */
  now?: () => number;
  /** Allowed clock skew between gateway and service, seconds (default 5). */
  clockToleranceSec?: number;
  replay?: ReplayCache;
}

/**
 * A verifier of the identity JWT: `(headers, {method, target, body?}) => Promise<Identity>`, rejecting
 * with IdentityVerificationError. Beyond the signature and `exp`/`iat`, it binds the token to this
 * request: `htm` and `htu` (or `htd`) must equal its method and target (or the target's digest), and `cd` the digest of its body.
 */
export function createJwtVerifier(
  o: JwtVerifierOptions,
): (headers: HeaderSource, request: ForwardedRequest) => Promise<Identity> {
  if (!o.jwksUrl === !o.jwks) throw new Error('createJwtVerifier: give exactly one of jwksUrl and jwks');
  if ((o.audience === undefined) === (o.anyAudience !== true)) {
    throw new Error(
      "createJwtVerifier: give `audience` (this service's name, the gateway's IDENTITY_JWT_AUDIENCE), or `anyAudience: true` " +
        'to accept a token meant for any service behind the gateway (never both)',
    );
  }
  const keys = o.jwks ? createLocalJWKSet(o.jwks) : createRemoteJWKSet(new URL(o.jwksUrl!));
  const where = o.header ?? 'x-gateway-jwt';
  return async (headers, request) => {
    let token = header(headers, where);
    if (where === 'authorization' && token) token = /^Bearer ([A-Za-z0-9._-]+)$/.exec(token)?.[1];
    if (!token) throw new IdentityVerificationError('missing', `no identity token in ${where}`);
    const now = o.now?.();
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, keys, {
        algorithms: ['EdDSA', 'ES256'],
        issuer: 'keygate',
        audience: o.audience,
        requiredClaims: ['iat', 'exp', 'jti', 'htm', 'kg'],
        // jose adds clockTolerance to maxTokenAge itself: the age allowed is 60 s plus the tolerance, once.
        maxTokenAge: MAX_AGE_MS / 1000,
        clockTolerance: o.clockToleranceSec ?? 5,
        currentDate: now === undefined ? undefined : new Date(now),
      }));
    } catch (err) {
      throw jwtFailure(err);
    }
    // The replay cache keys on jti: anything but a string would be keyed on its coercion.
    if (typeof claims.jti !== 'string' || claims.jti === '')
      throw new IdentityVerificationError('malformed', 'the jti claim is not a non-empty string');
    // Exactly one of htu (the target) and htd (its digest, for targets over 512 bytes).
    if ((claims.htu === undefined) === (claims.htd === undefined)) {
      throw new IdentityVerificationError(
        claims.htu === undefined ? 'missing' : 'malformed',
        'the token must carry exactly one of htu and htd',
      );
    }
    const sameTarget =
      claims.htu !== undefined
        ? claims.htu === request.target
        : claims.htd === createHash('sha256').update(request.target).digest('base64url');
    if (claims.htm !== request.method || !sameTarget) {
      throw new IdentityVerificationError('wrong_request', 'the token was issued for another request');
    }
    if (claims.cd !== undefined && typeof claims.cd !== 'string')
      throw new IdentityVerificationError('malformed', 'the cd claim is malformed');
    checkBody(claims.cd as string | undefined, request.body, o);
    const identity = decodeIdentity(() => claims.kg);
    // Remembered for as long as the token verifies: the clock tolerance extends both its exp and its age.
    const tolerance = o.clockToleranceSec ?? 5;
    const verifiesUntil =
      Math.min((claims.exp as number) + tolerance, (claims.iat as number) + MAX_AGE_MS / 1000 + 1 + tolerance) * 1000;
    if (o.replay && !(await o.replay.firstSeen(`jwt:${claims.jti}`, verifiesUntil))) {
      throw new IdentityVerificationError('replayed', 'this token was already used');
    }
    return identity;
  };
}

/** An in-process ReplayCache (one service instance); expired ids are swept as new ones arrive. */
export function createMemoryReplayCache(now: () => number = Date.now): ReplayCache {
  const seen = new Map<string, number>();
  return {
    firstSeen(id, expiresAtMs) {
      const t = now();
      // Insertion order is close to expiry order (all windows are 60 s): sweep from the front.
      for (const [k, exp] of seen) {
        if (exp > t) break;
        seen.delete(k);
      }
      const exp = seen.get(id);
      if (exp !== undefined && exp > t) return false;
      seen.set(id, expiresAtMs);
      return true;
    },
  };
}

// ------------------------------------------------------------------------------------------------

function header(h: HeaderSource, name: string): string | undefined {
  let v: string | string[] | null | undefined;
  if (typeof (h as Headers).get === 'function') v = (h as Headers).get(name);
  else {
    const rec = h as Record<string, string | string[] | undefined>;
    v = rec[name];
    if (v === undefined) for (const k in rec) if (k.toLowerCase() === name) v = rec[k];
  }
  // A header the gateway sets once, sent twice, is not the gateway's.
  if (Array.isArray(v)) return v.length === 1 ? v[0] : undefined;
  return v ?? undefined;
}

/**
 * No digest: no body. A digest: the body's own digest must equal it. A decision's mark (no real digest
 * takes that form): no body, or any body when the caller accepts unsigned bodies.
 */
function checkBody(signedDigest: string | undefined, body: ForwardedRequest['body'], opts: BodyOptions): void {
  const length = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  if (signedDigest === UNSIGNED_BODY) {
    if (length > 0 && opts.acceptUnsignedBody !== true)
      throw new IdentityVerificationError('body_unsigned', 'the body is not covered by the decision signature');
    return;
  }
  if (signedDigest === undefined) {
    if (length > 0) throw new IdentityVerificationError('digest_missing', 'the body is not covered by the signature');
    return;
  }
  if (body === undefined)
    throw new IdentityVerificationError('body_required', 'pass the raw body: the signature covers its digest');
  const actual = Buffer.from(contentDigest(body));
  const signed = Buffer.from(signedDigest);
  if (actual.length !== signed.length || !timingSafeEqual(actual, signed)) {
    throw new IdentityVerificationError('digest_mismatch', 'the body does not match the signed digest');
  }
}

function decodeIdentity(read: () => unknown): Identity {
  let v: unknown;
  try {
    v = read();
  } catch {
    v = undefined;
  }
  const o = v as Partial<Identity> | undefined;
  const nullableInt = (x: unknown) => x === null || Number.isSafeInteger(x);
  if (
    typeof o !== 'object' ||
    o === null ||
    !Number.isSafeInteger(o.keyId) ||
    !(typeof o.keyType === 'string' && /^[a-z][a-z0-9_]{0,31}$/.test(o.keyType)) ||
    !Number.isSafeInteger(o.organizationId) ||
    !nullableInt(o.userId) ||
    !nullableInt(o.workspaceId) ||
    !(o.role === null || typeof o.role === 'string') ||
    !Array.isArray(o.scopes) ||
    !o.scopes.every((x) => typeof x === 'string') ||
    !(o.plan === null || typeof o.plan === 'string') ||
    !(o.metadata === undefined || (typeof o.metadata === 'object' && o.metadata !== null && !Array.isArray(o.metadata)))
  ) {
    throw new IdentityVerificationError('malformed', 'the identity is malformed');
  }
  return o as Identity;
}

/** jose's verdicts become reasons; a JWKS that cannot be fetched is not the caller's fault and is rethrown as is (answer 503). */
function jwtFailure(err: unknown): unknown {
  if (
    !(err instanceof joseErrors.JOSEError) ||
    err instanceof joseErrors.JWKSTimeout ||
    err instanceof joseErrors.JWKSInvalid
  )
    return err;
  if (err instanceof joseErrors.JWTExpired)
    return new IdentityVerificationError('stale', 'the identity token has expired');
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'aud')
      return new IdentityVerificationError('wrong_audience', 'the identity token is for another audience');
    if (err.claim === 'iat' && err.reason === 'check_failed')
      return new IdentityVerificationError('stale', 'the identity token is too old');
    return new IdentityVerificationError(
      err.reason === 'missing' ? 'missing' : 'malformed',
      `the identity token's ${err.claim} claim is ${err.reason === 'missing' ? 'missing' : 'invalid'}`,
    );
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed || err instanceof joseErrors.JWKSNoMatchingKey) {
    return new IdentityVerificationError('bad_signature', 'the identity token signature does not verify');
  }
  return new IdentityVerificationError('malformed', 'the identity token is malformed');
}

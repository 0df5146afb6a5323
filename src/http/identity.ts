// The identity headers of CONTRACT section 5: what the gateway resolved, signed for the backend.
import { createHash, createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { safeEqual } from './safe-equal.js';

export interface Identity {
  keyId: number;
  keyType: 'workspace' | 'personal' | 'partner';
  organizationId: number;
  userId: number | null;
  workspaceId: number | null;
  role: string | null;
  scopes: string[];
  plan: string | null;
  /** The key's metadata (a JSON object of at most 1 KiB); the field is absent for a key without any. */
  metadata?: Record<string, unknown>;
}

export const MAX_SIGNATURE_AGE_MS = 60_000;

export function encodeIdentity(id: Identity): string {
  return Buffer.from(JSON.stringify(id)).toString('base64url');
}

// The HMAC key imported once per secret (a string key is imported again on every createHmac).
const keys = new Map<string, KeyObject>();
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size > 16) keys.clear(); // a handful of secrets per process; never a leak
    keys.set(secret, (key = createSecretKey(Buffer.from(secret))));
  }
  return key;
}

/**
 * The signature of CONTRACT section 5, extended for requests with a body: when a body is forwarded,
 * its RFC 9530 `Content-Digest` value is signed too, on a line of its own after the identity, so a
 * captured signature cannot carry another body. Body-less requests sign exactly the contract's string.
 */
export function sign(
  secret: string,
  timestamp: string,
  requestId: string,
  method: string,
  path: string,
  identity: string,
  contentDigest?: string,
): string {
  // Two updates rather than one joined string: the identity (hundreds of bytes) is not copied first.
  const mac = createHmac('sha256', keyOf(secret))
    .update(`${timestamp}\n${requestId}\n${method}\n${path}\n`)
    .update(identity);
  if (contentDigest !== undefined) mac.update(`\n${contentDigest}`);
  return mac.digest('hex');
}

/** The RFC 9530 `Content-Digest` field value of a body: `sha-256=:<base64>:`. */
export function contentDigest(body: Buffer): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}

/**
 * Verify the signed headers of a forwarded request; returns the identity or null. `contentDigest` is
 * the request's `Content-Digest` field when it has one (then it is part of the signed string); the
 * caller checks it against the body it reads (`digestMatches`).
 */
export function verifyIdentity(
  secret: string,
  h: { identity?: string; timestamp?: string; signature?: string; requestId?: string; contentDigest?: string },
  method: string,
  path: string,
  now: number,
): Identity | null {
  const { identity, timestamp, signature, requestId } = h;
  if (!identity || !timestamp || !signature || !requestId || !/^\d{1,16}$/.test(timestamp)) return null;
  const age = now - Number(timestamp);
  if (age > MAX_SIGNATURE_AGE_MS || age < -MAX_SIGNATURE_AGE_MS) return null;
  if (!safeEqual(sign(secret, timestamp, requestId, method, path, identity, h.contentDigest), signature)) return null;
  try {
    return JSON.parse(Buffer.from(identity, 'base64url').toString('utf8')) as Identity;
  } catch {
    return null;
  }
}

/** Whether a signed request's body is the one its signature covers: no digest, no body; else equal digests. */
export function digestMatches(signedDigest: string | undefined, body: Buffer): boolean {
  if (signedDigest === undefined) return body.length === 0;
  return safeEqual(contentDigest(body), signedDigest);
}

// The identity headers of docs/decisions.md section 5: what the gateway resolved, signed for the backend.
// The backend verifies them with the shipped verifier (src/verifier, keygate/verifier), as any other
// upstream would: the identity's type, the Content-Digest and the signature's age are defined there once.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { Identity } from '../verifier/index.js';
import { UNSIGNED_BODY } from '../verifier/digest.js';

export type { Identity };
export { contentDigest, UNSIGNED_BODY } from '../verifier/digest.js';

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
 * The signature of docs/decisions.md section 5, extended for requests with a body: when a body is forwarded,
 * its RFC 9530 `Content-Digest` value is signed too, on a line of its own after the identity, so a
 * captured signature cannot carry another body. Body-less requests sign exactly the contract's string.
 * A decision for another proxy, which never sees the body, passes UNSIGNED_BODY for the digest: the
 * signature is then marked as made without the body (`unsigned-body:<hex>`), which a verifier accepts
 * with a body only when told to (src/verifier/index.ts, acceptUnsignedBody).
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
  return contentDigest === UNSIGNED_BODY ? `${UNSIGNED_BODY}:${mac.digest('hex')}` : mac.digest('hex');
}

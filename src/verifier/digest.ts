// The parts of the identity contract (docs/decisions.md section 5) that the gateway's signing shares with
// the verifier, apart from index.ts so the gateway's process does not load `jose` for them (issue 25):
// index.ts re-exports both.
import { createHash } from 'node:crypto';

/** How old a signed identity may be when it is verified. */
export const MAX_AGE_MS = 60_000;

/** The RFC 9530 Content-Digest value of a body, as the gateway computes it. */
export function contentDigest(body: Buffer | Uint8Array | string): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}

/**
 * The mark of a signature made without the body: keygate's decision service (forward-auth, docs/forward-auth.md)
 * decides a request another proxy holds and never sees its body. It stands where the Content-Digest
 * would, on the signed string's last line and in the JWT's `cd` claim, and prefixes the HMAC header's
 * value (`unsigned-body:<hex>`), so a marked signature can neither pass as the gateway's own nor lose its mark.
 */
export const UNSIGNED_BODY = 'unsigned-body';

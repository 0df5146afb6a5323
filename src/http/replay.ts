// The backend's replay guard: a gateway signature is accepted once within its validity window
// (MAX_AGE_MS either side of now), so a captured signed request cannot be sent again. The
// signature rather than the request id is the nonce: a client may legitimately reuse its
// X-Request-Id, but every forwarded request carries a new timestamp and so a new signature.
import { LRUCache } from 'lru-cache';
import { MAX_AGE_MS } from '../verifier/digest.js';

export interface ReplayGuard {
  /** True the first time `signature` is seen within the window; false for a replay. */
  firstUse(signature: string, nowMs: number): boolean;
}

export function createReplayGuard(opts: { max?: number } = {}): ReplayGuard {
  // Entries expire with the window they guard (a signature older than that is refused as stale
  // anyway); the bound keeps memory finite under a flood, evicting the oldest first.
  const seen = new LRUCache<string, number>({ max: opts.max ?? 1_000_000 });
  return {
    firstUse(signature, nowMs) {
      const until = seen.get(signature);
      if (until !== undefined && until > nowMs) return false;
      seen.set(signature, nowMs + 2 * MAX_AGE_MS);
      return true;
    },
  };
}

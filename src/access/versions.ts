// Access versions (docs/decisions.md section 3): what lets a gateway trust a cached principal.
//
// Their storage is declared once, in the store layer's port (src/limits/types.ts: AccessVersions,
// Preflight, AccessStores), beside the counters whose round trip they share, and implemented by every
// backend there; access/ sits above limits/ and imports them from it. What a change of access data does
// with them is access's: the bump after the commit, below.
import type { Logger } from 'pino';
import type { AccessVersions } from '../limits/types.js';

/** The `accessChanged` a service layer calls after committing an access change: bumps the organization's version. */
export function accessChangedVia(versions: AccessVersions, log: Logger) {
  return async (orgId: number) => {
    try {
      await versions.bump(orgId);
    } catch (err) {
      // The commit stands; gateways still evict on the database's NOTIFY.
      log.error({ err: (err as Error).message, orgId }, 'access version bump failed');
    }
  };
}

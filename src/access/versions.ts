// Access versions (docs/decisions.md section 3): what lets a gateway trust a cached principal.
//
// The interfaces are named here, in access/, because the meaning is access's. Their implementations
// live in limits/ (src/limits/memory.ts and src/limits/redis.ts), beside the Redis connection and
// the memory maps they share with the counters and the cooldown, and are reached as
// `SharedStores.versions` and `SharedStores.preflight` (src/limits/types.ts; limits/ keeps its own
// LimitStores to the counters). limits/ does not import these names: layers only look down, and access/
// sits above limits/. The stores' members are declared with the same shapes and TypeScript's structural
// typing checks the fit where src/app/ and the CLI hand them to the principal cache and the backend.

import type { Logger } from 'pino';

/**
 * A per-organization access version. Every writer of access data bumps it after its commit; the gateway
 * keeps a cached principal only while the version it was resolved at is still current.
 */
export interface AccessVersions {
  get(orgId: number): Promise<number>;
  bump(orgId: number): Promise<number>;
}

/**
 * The round trip the gateway makes before resolving a key: the IP's cooldown and, when the key's
 * principal is cached, its organization's access version. Redis answers both in one round trip.
 */
export type Preflight = (ip: string, orgId: number | null) => Promise<{ cooldown: number; version: number | null }>;

/** The access part of the shared stores: what the principal cache, the seed and every writer of access data use. */
export interface AccessStores {
  versions: AccessVersions;
  preflight: Preflight;
}

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

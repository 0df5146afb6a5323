// Access versions through an outage. A bump that could not reach Redis is kept pending and bumped
// again before its node's breaker closes (and before any call reads that version), so a change made
// during the outage is never hidden by an old cached principal. Until then its version cannot be
// proven: the gate and the preflight answer without one (the gateway resolves from the database).
import type { ClusterTopology } from '../redis-cluster/topology.js';
import type { Calls } from './calls.js';
import type { NodeBreakers } from './nodes.js';
import { StoreUnavailableError, type FallbackStores, type PrimaryStores } from './options.js';

export interface BumpReplay {
  /** Whether a bump of this organization's version is still owed to Redis. */
  pending(orgId: number): boolean;
  /** Bumps still pending whose node answers now (in a Cluster, a promoted replica never probed). */
  replay(): Promise<void>;
  /** In a probe of `node`, before its breaker closes: the bumps owed to it. */
  beforeClose(node: string): Promise<void>;
  /** An organization's version for the gate and the preflight; null when it cannot be proven. */
  versionOf(orgId: number): Promise<number | null>;
  versions: SharedVersions;
}

type SharedVersions = PrimaryStores['versions'];

export function createBumpReplay(o: {
  primary: PrimaryStores;
  fallback: FallbackStores;
  topology?: ClusterTopology;
  nodes: NodeBreakers;
  calls: Calls;
}): BumpReplay {
  const { primary, fallback, topology, nodes } = o;
  const { run, withoutRedis } = o.calls;
  const pendingBumps = new Set<number>();
  const pending = (orgId: number) => pendingBumps.size > 0 && pendingBumps.has(orgId);

  let replaying: Promise<void> | undefined;
  function replay(): Promise<void> {
    replaying ??= (async () => {
      for (const org of [...pendingBumps]) {
        if (nodes.at.org(org).state !== 'closed') continue;
        await primary.versions.bump(org);
        pendingBumps.delete(org);
      }
    })()
      .catch(() => {}) // still pending
      .finally(() => (replaying = undefined));
    return replaying;
  }

  async function versionOf(orgId: number): Promise<number | null> {
    if (pending(orgId)) {
      await replay();
      if (pendingBumps.has(orgId)) return withoutRedis(async () => null);
    }
    return run(
      nodes.at.org(orgId),
      'versions.get',
      () => primary.versions.get(orgId),
      async () => null,
    );
  }

  const versionsUnavailable = async (): Promise<never> => {
    throw new StoreUnavailableError('access versions unavailable');
  };

  return {
    pending,
    replay,
    async beforeClose(node) {
      for (const org of [...pendingBumps]) {
        if (topology && topology.org(org) !== node) continue;
        await primary.versions.bump(org);
        pendingBumps.delete(org);
      }
    },
    versionOf,
    versions: {
      get: (orgId) => run(nodes.at.org(orgId), 'versions.get', () => primary.versions.get(orgId), versionsUnavailable),
      async bump(orgId) {
        try {
          const version = await run(
            nodes.at.org(orgId),
            'versions.bump',
            () => primary.versions.bump(orgId),
            versionsUnavailable,
          );
          pendingBumps.delete(orgId);
          return version;
        } catch (err) {
          pendingBumps.add(orgId);
          await fallback.versions.bump(orgId);
          throw err;
        }
      },
    },
  };
}

// A Cluster node down: the slot map is read again every CLUSTER_REFRESH_MS until no breaker is open on
// a node that owns slots, so a promoted replica is used as soon as it is promoted. A node that no longer
// owns any is forgotten with its breaker.
import type { Breaker } from '../breaker.js';
import type { ClusterTopology } from '../redis-cluster/topology.js';
import { CLUSTER_REFRESH_MS } from './options.js';

export function watchSlotMap(o: {
  topology: ClusterTopology;
  breakers: Map<string, Breaker>;
  closing(): boolean;
  /** After each read: the breakers of the nodes that own no slot any more, dropped. */
  onRefreshed(dropped: Breaker[]): void;
  /** degraded() may have changed. */
  changed(): void;
}): { refreshWhileDown(): void; stop(): void } {
  const { topology } = o;
  let refreshTimer: NodeJS.Timeout | undefined;
  let refreshing = false;
  function refreshWhileDown() {
    if (refreshTimer !== undefined || o.closing()) return;
    const refresh = async () => {
      if (refreshing) return;
      refreshing = true;
      try {
        await topology.refresh();
      } finally {
        refreshing = false;
      }
      const primaries = topology.primaries();
      const dropped: Breaker[] = [];
      for (const [node, breaker] of o.breakers) {
        if (!primaries.has(node)) {
          breaker.stop();
          o.breakers.delete(node);
          dropped.push(breaker);
        }
      }
      o.onRefreshed(dropped);
      o.changed();
      if ([...o.breakers.values()].every((b) => b.state === 'closed')) {
        clearInterval(refreshTimer);
        refreshTimer = undefined;
      }
    };
    refreshTimer = setInterval(() => void refresh(), CLUSTER_REFRESH_MS);
    refreshTimer.unref();
    void refresh();
  }

  return { refreshWhileDown, stop: () => clearInterval(refreshTimer) };
}

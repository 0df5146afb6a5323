// Open mode: what the fallback counted while a Redis server was away is added to that server's counters
// before its breaker closes. Without it the shared counter would let the rest of each budget through a
// second time (31 of 20 in a Sentinel failover). A call Redis counted after all and the fallback counted
// too is counted twice: the error is on the side of refusing.
import type { Breaker } from '../breaker.js';
import type { ClusterTopology } from '../redis-cluster/topology.js';
import type { NodeBreakers } from './nodes.js';
import type { FallbackStores, PrimaryStores } from './options.js';

export interface Handover {
  /**
   * Servers whose counters the fallback spent without them, their counts not handed over yet. A call
   * Redis fails while its breaker stays closed is answered by the fallback too: the next answer of that
   * server hands the counts over, as the probe does after an outage.
   */
  readonly owed: Set<Breaker>;
  /** A server owed counts answered a call: its counts are handed over now. */
  settleOwed(breaker: Breaker): void;
  /** In a probe, before the breaker closes: what the fallback counted during the outage. */
  beforeClose(node: string): Promise<void>;
  /**
   * As the breaker closes, in the same tick: what the fallback admitted while `beforeClose` was on its
   * way. Sent before any call that follows on the same connection, so those already count it.
   */
  atClose(node: string): void;
  /** Counters whose slots moved to a node that answers: their counts go there. */
  handOverMoved(): Promise<void>;
}

export function createHandover(o: {
  primary: PrimaryStores;
  fallback: FallbackStores;
  topology?: ClusterTopology;
  nodes: NodeBreakers;
}): Handover {
  const { primary, fallback, topology, nodes } = o;
  const owed = new Set<Breaker>();

  function settleOwed(breaker: Breaker): void {
    owed.delete(breaker);
    for (const [node, b] of nodes.all) if (b === breaker) return handOverNow(node, breaker);
  }

  /** Sent now, not awaited; what fails is kept by the fallback and owed to the server's next answer. */
  function handOverNow(node: string, breaker: Breaker): void {
    handOverCounts(node).catch(() => owed.add(breaker));
  }

  /** One hand-over of `node`'s counters. */
  async function handOverCounts(node: string): Promise<void> {
    if (fallback.takeCounts === undefined || primary.addCounts === undefined) return;
    const counts = fallback.takeCounts(topology ? (id) => topology.counter(id) === node : undefined);
    if (counts.length === 0) return;
    try {
      await primary.addCounts(counts);
    } catch (err) {
      await fallback.addCounts?.(counts); // kept for the next probe
      throw err;
    }
  }

  /**
   * A Cluster's counters whose slots now belong to a node that answers (the replica promoted in place
   * of a lost primary): what the fallback counted of them is added there. The lost node's breaker is
   * dropped with it, so its own probe never will; without this the promoted counter lets the rest of
   * the budget through a second time (122 of 100). Sent before the calls that follow on the same
   * connections, so those already count it. What fails is kept, owed to its node's next answer.
   */
  async function handOverMoved(): Promise<void> {
    if (fallback.takeCounts === undefined || primary.addCounts === undefined) return;
    const answering = (node: string) => {
      const breaker = nodes.all.get(node);
      return breaker === undefined || breaker.state === 'closed';
    };
    const counts = fallback.takeCounts((id) => answering(topology!.counter(id)));
    if (counts.length === 0) return;
    try {
      await primary.addCounts(counts);
    } catch {
      await fallback.addCounts?.(counts);
      for (const { id } of counts) owed.add(nodes.of(topology!.counter(id)));
    }
  }

  return {
    owed,
    settleOwed,
    async beforeClose(node) {
      // One pass: under steady load the fallback admits a request during every round trip, so waiting
      // until it has nothing left would keep the breaker open as long as the load lasts. atClose sends
      // what it admitted meanwhile.
      await handOverCounts(node);
      owed.delete(nodes.all.get(node)!);
    },
    atClose(node) {
      const breaker = nodes.all.get(node);
      if (breaker !== undefined) handOverNow(node, breaker);
    },
    handOverMoved,
  };
}

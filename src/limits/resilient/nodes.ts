// A breaker per Redis server (../breaker.ts): one for a standalone or Sentinel Redis, one per primary
// of a Cluster. Each Cluster call is split by the node that owns its keys (./split.ts), so only what
// lives on an unreachable primary falls back or is refused, and a call stalled on one node never makes
// another look silent. While a node is down the slot map is read again every CLUSTER_REFRESH_MS, so
// its promoted replica is used as soon as it is promoted.
// `degraded()` (keygate_degraded, /readyz's `"redis":"degraded"`) says whether any primary is down.
// The healthy primaries go on answering only with `cluster-require-full-coverage no`: by default every
// node refuses (CLUSTERDOWN) from the moment the failure is agreed until the replica is promoted.
import type { Logger } from 'pino';
import { createBreaker, type Breaker, type BreakerOptions } from '../breaker.js';
import type { LoopClock } from '../loop-clock.js';
import type { ClusterTopology } from '../redis-cluster/topology.js';
import { watchSlotMap } from './slot-map.js';
import { type BreakerEvents, type ConnectionEvents } from './options.js';

export interface NodeBreakersOptions {
  breaker: Omit<BreakerOptions, 'probe' | 'onOpen' | 'onClose'> & { loop: LoopClock };
  mode: 'open' | 'closed';
  log: Logger;
  events: BreakerEvents;
  topology?: ClusterTopology;
  connection?: ConnectionEvents;
  /** Whether `node` answers again, and whatever must reach it before calls do. */
  probe(node: string): Promise<boolean>;
  /** As `node`'s breaker closes, before any call goes to it. */
  onClosing?(node: string): void;
  /** For the outage's log line. */
  liveInstances(): number;
  /** After each read of the slot map: the breakers of the nodes that own no slot any more, dropped. */
  onRefreshed(dropped: Breaker[]): void;
}

export interface NodeBreakers {
  /** The one breaker of a standalone or Sentinel Redis; undefined for a Cluster. */
  readonly single: Breaker | undefined;
  /** Every breaker by its node: '' for a standalone or Sentinel Redis, `host:port` in a Cluster. */
  readonly all: Map<string, Breaker>;
  of(node: string): Breaker;
  /** The breaker of the node that holds a counter, an address's cooldown, an organization's version. */
  at: { counter(id: string): Breaker; address(ip: string): Breaker; org(orgId: number): Breaker };
  degraded(): boolean;
  closing(): boolean;
  stop(): void;
}

export function createNodeBreakers(o: NodeBreakersOptions): NodeBreakers {
  const { mode, log, events, topology } = o;
  let closing = false;
  const breakers = new Map<string, Breaker>();
  function breakerOf(node: string): Breaker {
    let breaker = breakers.get(node);
    if (breaker === undefined) {
      breaker = createBreaker({
        ...o.breaker,
        probe: () => o.probe(node),
        onOpen(reason) {
          log.warn(
            { reason, mode, liveInstances: o.liveInstances(), ...(topology ? { node } : {}) },
            'redis unavailable: rate limiting degraded',
          );
          if (topology) refreshWhileDown();
          changed();
        },
        onClose() {
          o.onClosing?.(node);
          log.info({ mode, ...(topology ? { node } : {}) }, 'redis recovered: shared counters rule again');
          events.onRecovered?.();
          changed();
        },
      });
      if (closing) breaker.stop();
      breakers.set(node, breaker);
    }
    return breaker;
  }
  const single = topology ? undefined : breakerOf('');
  const at = {
    counter: (id: string) => single ?? breakerOf(topology!.counter(id)),
    address: (ip: string) => single ?? breakerOf(topology!.address(ip)),
    org: (orgId: number) => single ?? breakerOf(topology!.org(orgId)),
  };

  function degraded(): boolean {
    if (single) return single.state !== 'closed';
    let primaries: Set<string> | undefined;
    for (const [node, breaker] of breakers) {
      if (breaker.state === 'closed') continue;
      primaries ??= topology!.primaries();
      // '' holds the calls made before the client knew the slot map.
      if (node === '' || primaries.has(node)) return true;
    }
    return false;
  }

  // onDegraded is called once per change of degraded().
  let wasDegraded = false;
  function changed() {
    const now = degraded();
    if (now === wasDegraded) return;
    wasDegraded = now;
    events.onDegraded?.(now);
  }

  const slotMap = topology
    ? watchSlotMap({ topology, breakers, closing: () => closing, onRefreshed: o.onRefreshed, changed })
    : undefined;
  const refreshWhileDown = () => slotMap?.refreshWhileDown();

  o.breaker.loop.onTick(() => {
    for (const breaker of breakers.values()) breaker.tick();
  });
  if (topology) {
    // Only a primary's connection counts: a replica's, or a seed's the client drops once it has the
    // slot map, routes no call.
    topology.onNode('close', (node) => {
      if (!closing && topology.primaries().has(node)) breakerOf(node).trip('connection closed');
    });
    topology.onNode('ready', (node) => breakers.get(node)?.probeNow());
  } else {
    o.connection?.on('close', () => single!.trip('connection closed'));
    o.connection?.on('ready', () => single!.probeNow());
  }

  return {
    single,
    all: breakers,
    of: breakerOf,
    at,
    degraded,
    closing: () => closing,
    stop() {
      closing = true;
      for (const breaker of breakers.values()) breaker.stop();
      slotMap?.stop();
    },
  };
}

// Where a Redis Cluster keeps each key: the node that owns its hash tag's slot in the client's slot map,
// and the events of each node's connection. The breakers judge each node on its own (../resilient/nodes.ts).
import type { Cluster, Redis } from 'ioredis';
import { addressKey } from '../../http/address.js';
import { pingWithin } from '../redis/client.js';
import { keySlot, SLOTS } from './slot.js';

/**
 * Where a Cluster keeps each counter, cooldown and access version: the node (`host:port`) that owns
 * its hash tag's slot in the client's slot map now. The breaker judges each node on its own
 * (../resilient/nodes.ts).
 */
export interface ClusterTopology {
  counter(id: string): string;
  address(ip: string): string;
  org(orgId: number): string;
  /** The nodes that own slots now. */
  primaries(): Set<string>;
  /** PING one node; false when it does not answer within `timeoutMs` (or the client has no connection to it). */
  ping(node: string, timeoutMs: number): Promise<boolean>;
  /** Reads the slot map again (CLUSTER SLOTS): a promoted replica is used from then on. */
  refresh(): Promise<void>;
  /** A node's connection closed, or became ready. */
  onNode(event: 'close' | 'ready', listener: (node: string) => void): void;
}

type NodeClient = Redis & { options: { host?: string; port?: number } };
const nodeKey = (node: NodeClient) => `${node.options.host}:${node.options.port}`;

export function clusterTopology(cluster: Cluster): ClusterTopology {
  // ioredis keeps the slot map as `slots[slot] = [primary, ...replicas]` (refreshed on MOVED, on its
  // own interval and by `refresh`); it is not in its typings.
  const slots = () => (cluster as unknown as { slots: (string[] | undefined)[] }).slots;
  const owner = (tag: string) => slots()[keySlot(tag)]?.[0] ?? '';
  const listeners = { close: [] as ((node: string) => void)[], ready: [] as ((node: string) => void)[] };
  const watched = new WeakSet<NodeClient>();
  const watch = (node: NodeClient) => {
    if (watched.has(node)) return;
    watched.add(node);
    node.on('close', () => listeners.close.forEach((listener) => listener(nodeKey(node))));
    node.on('ready', () => listeners.ready.forEach((listener) => listener(nodeKey(node))));
  };
  // The seed nodes may be connecting already; the others come with the slot map.
  for (const node of cluster.nodes('all')) watch(node as NodeClient);
  cluster.on('+node', watch);
  return {
    counter: owner,
    address: (ip) => owner(addressKey(ip)),
    org: (orgId) => owner(String(orgId)),
    primaries() {
      const out = new Set<string>();
      const map = slots();
      for (let slot = 0; slot < SLOTS; slot++) {
        const node = map[slot]?.[0];
        if (node !== undefined) out.add(node);
      }
      return out;
    },
    async ping(node, timeoutMs) {
      const client = cluster.nodes('all').find((n) => nodeKey(n as NodeClient) === node);
      if (client === undefined) return false;
      return pingWithin(client, timeoutMs);
    },
    refresh() {
      const refresher = cluster as unknown as { refreshSlotsCache(done: (err?: Error) => void): void };
      return new Promise((resolve) => refresher.refreshSlotsCache(() => resolve()));
    },
    onNode(event, listener) {
      listeners[event].push(listener);
    },
  };
}

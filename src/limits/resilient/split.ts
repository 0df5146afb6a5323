// A Cluster's calls split by node: each part goes to the node that owns its keys, through that node's
// breaker, so a counter on a healthy node is spent in Redis while one on a lost node falls back (open
// mode) or the whole request is refused before any part spends (closed mode).
import type { Breaker } from '../breaker.js';
import { hitOf, type CounterRef, type GateResult, type LayerState, type SharedStores } from '../types.js';
import type { Clock } from '../../ops/clock.js';
import type { BumpReplay } from './bumps.js';
import type { Calls } from './calls.js';
import type { NodeBreakers } from './nodes.js';
import type { FallbackStores } from './options.js';

export interface NodeSplit {
  spend(refs: CounterRef[], cost: 0 | 1): Promise<LayerState[]>;
  preflight: SharedStores['preflight'];
  gate: SharedStores['gate'];
}

export function createNodeSplit(o: {
  mode: 'open' | 'closed';
  clock: Clock;
  nodes: NodeBreakers;
  calls: Calls;
  bumps: BumpReplay;
  fallback: FallbackStores;
  /** The fallback's limiter as open mode spends it (held to this instance's share). */
  fallbackLimiter: FallbackStores['limiter'];
  /** One node's part of a spend, through its breaker. */
  spendOn(breaker: Breaker, refs: CounterRef[], cost: 0 | 1, at?: number): Promise<LayerState[]>;
  cooldownCheck(ip: string): Promise<number>;
}): NodeSplit {
  const { mode, clock, nodes, calls, fallbackLimiter, spendOn } = o;
  const { at } = nodes;

  /**
   * One call per node: counters on a healthy node are spent in Redis, the others fall back. The
   * monthly quota's counter (last) is spent once the others admitted the request, as the stores do
   * (CounterRef).
   */
  async function spend(refs: CounterRef[], cost: 0 | 1): Promise<LayerState[]> {
    // One clock reading for every node's part, so the layers of one request never land in different windows.
    const when = clock.now();
    const month = refs.length > 0 && refs[refs.length - 1].month ? refs[refs.length - 1] : undefined;
    const minute = month ? refs.slice(0, -1) : refs;
    const groups = new Map<Breaker, number[]>();
    minute.forEach((ref, n) => {
      const breaker = at.counter(ref.id);
      const group = groups.get(breaker);
      if (group) group.push(n);
      else groups.set(breaker, [n]);
    });
    if (mode === 'closed' && calls.anyDown([...groups.keys(), ...(month ? [at.counter(month.id)] : [])]))
      return calls.withoutRedis(() => fallbackLimiter.spend(refs, cost, when));
    const states: LayerState[] = new Array<LayerState>(minute.length);
    await Promise.all(
      [...groups].map(async ([breaker, indexes]) => {
        const got = await spendOn(
          breaker,
          indexes.map((n) => minute[n]),
          cost,
          when,
        );
        indexes.forEach((n, k) => (states[n] = got[k]));
      }),
    );
    if (month) {
      const within = cost === 1 && states.every((state) => state.used <= state.limit);
      const [quota] = await spendOn(at.counter(month.id), [month], within ? 1 : 0, when);
      states.push(quota);
    }
    return states;
  }

  /** The cooldown and the version each from its own node. */
  async function preflight(ip: string, orgId: number | null) {
    if (mode === 'closed' && calls.anyDown(orgId === null ? [at.address(ip)] : [at.address(ip), at.org(orgId)]))
      return calls.withoutRedis(() => o.fallback.preflight(ip, orgId));
    const [cooldown, version] = await Promise.all([
      o.cooldownCheck(ip),
      orgId === null ? null : o.bumps.versionOf(orgId),
    ]);
    return { cooldown, version };
  }

  return {
    spend,
    preflight,
    // The Cluster's gate is the preflight and then the spend (or the reads), as the stores do it.
    async gate(req): Promise<GateResult> {
      const pre = await preflight(req.ip, req.orgId);
      if (pre.cooldown > 0) return { kind: 'cooldown', seconds: pre.cooldown };
      if (pre.version !== req.version) return { kind: 'stale' };
      if (req.spend) {
        const [key, ip, month] = await spend(req.spend, 1);
        return { kind: 'spent', hit: hitOf(key, ip, month) };
      }
      return { kind: 'peeked', states: await spend(req.peek ?? [], 0) };
    },
  };
}

// The resilient stores' interface over their parts (./index.ts composes them): each call through the
// breaker of the node that holds its keys, to Redis or to the fallback (./calls.ts).
import type { Breaker } from '../breaker.js';
import type { LoopClock } from '../loop-clock.js';
import type { CounterRef, GateResult, SharedStores } from '../types.js';
import type { Clock } from '../../ops/clock.js';
import type { BumpReplay } from './bumps.js';
import type { Calls } from './calls.js';
import type { FleetWatch } from './fleet-watch.js';
import type { Handover } from './handover.js';
import type { NodeBreakers } from './nodes.js';
import type { ResilientOptions, ResilientStores } from './options.js';
import { createNodeSplit } from './split.js';

export interface ResilientParts {
  o: ResilientOptions;
  clock: Clock;
  nodes: NodeBreakers;
  calls: Calls;
  handover: Handover;
  bumps: BumpReplay;
  fleet: FleetWatch;
  loop: LoopClock;
}

export function resilientFace(parts: ResilientParts): ResilientStores {
  const { o, clock, nodes, calls, handover, bumps, fleet, loop } = parts;
  const { primary, fallback, mode } = o;
  const { run, withoutRedis } = calls;

  const spendOn = (breaker: Breaker, refs: CounterRef[], cost: 0 | 1, at?: number) =>
    run(
      breaker,
      'limiter.spend',
      () => fleet.spend(refs, cost, at),
      () => {
        // Only open mode gets here (closed mode refuses without the fallback).
        if (cost === 1) handover.owed.add(breaker);
        return fleet.fallbackLimiter.spend(refs, cost, at);
      },
    );
  const cooldownCheck = (ip: string) =>
    run(
      nodes.at.address(ip),
      'cooldown.check',
      () => primary.cooldown.check(ip),
      () => fallback.cooldown.check(ip),
    );
  const single = nodes.single;
  const split = single
    ? undefined
    : createNodeSplit({
        mode,
        clock,
        nodes,
        calls,
        bumps,
        fallback,
        fallbackLimiter: fleet.fallbackLimiter,
        spendOn,
        cooldownCheck,
      });

  /** The gate of a standalone or Sentinel Redis: one call, unless a bump of the organization is pending. */
  function singleGate(breaker: Breaker): SharedStores['gate'] {
    return (req) => {
      // Degraded, no version can be proven: 'stale' sends the gateway to its database path.
      const withoutVersion = async (): Promise<GateResult> => {
        const seconds = await fallback.cooldown.check(req.ip);
        return seconds > 0 ? { kind: 'cooldown', seconds } : { kind: 'stale' };
      };
      if (bumps.pending(req.orgId))
        return bumps
          .replay()
          .then(() =>
            bumps.pending(req.orgId)
              ? withoutRedis(withoutVersion)
              : run(breaker, 'gate', () => fleet.gate(req), withoutVersion),
          );
      return run(breaker, 'gate', () => fleet.gate(req), withoutVersion);
    };
  }

  return {
    degraded: nodes.degraded,
    liveInstances: fleet.live,
    gate: single ? singleGate(single) : split!.gate,
    limiter: { spend: single ? (refs, cost) => spendOn(single, refs, cost) : split!.spend },
    cooldown: {
      check: cooldownCheck,
      recordFailure: (ip) =>
        run(
          nodes.at.address(ip),
          'cooldown.recordFailure',
          () => primary.cooldown.recordFailure(ip),
          () => fallback.cooldown.recordFailure(ip),
        ),
    },
    versions: bumps.versions,
    preflight: single
      ? (ip, orgId) =>
          run(
            single,
            'preflight',
            () => primary.preflight(ip, orgId),
            // Degraded, no version can be proven: null makes the gateway resolve from the database.
            async () => ({ cooldown: await fallback.cooldown.check(ip), version: null }),
          )
      : split!.preflight,
    async ready() {
      if (!nodes.degraded()) return primary.ready();
      for (const breaker of nodes.all.values()) breaker.poke();
      return mode === 'open';
    },
    async close() {
      const leaving = fleet.registered && !nodes.degraded();
      nodes.stop();
      fleet.stop();
      loop.stop();
      if (leaving) await fleet.leave();
      await primary.close();
      await fallback.close();
    },
  };
}

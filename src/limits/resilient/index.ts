// Redis failures: circuit breakers in front of the shared stores (../breaker.ts: its states and
// transitions). While a Redis server can be reached, it rules, however slowly it answers (./calls.ts).
// A server is judged unreachable when
//   - its connection closes (the client's `close` event: Redis killed, restarted, refused), or
//   - it has answered nothing while asked for `replyTimeoutMs` (at least MIN_SILENCE_MS) of time during
//     which the event loop was free to read a reply (../loop-clock.ts): a stalled or blackholed
//     connection. Time the gateway's own loop was blocked does not count, so a busy process or a burst
//     is no outage; or
//   - every call has failed for `failureSpanMs` (at least `failuresToOpen` of them, none succeeding):
//     a Redis that answers only errors.
// Then its breaker opens: calls waiting on it and calls to come either fall back to in-memory stores
// per instance (RATE_LIMIT_FAILURE_MODE=open: each instance admits its share of what was left of each
// budget, so the fleet stays near one budget; ./fleet-watch.ts) or fail fast with StoreUnavailableError
// (closed: the gateway answers 503). A probe (PING) every `probeIntervalMs`, and at once when the
// client reconnects, closes the breaker again once the bumps (./bumps.ts) and the counts (./handover.ts)
// owed to the server reached it (what the fallback admitted meanwhile is sent as it closes, ahead of
// the calls that follow); the shared counters then rule again.
//
// One breaker for a standalone or Sentinel Redis, one per primary of a Cluster (./nodes.ts), whose
// calls are split by node (./split.ts). This file composes those parts into the stores' interface.
import { createLoopClock } from '../loop-clock.js';
import { systemClock } from '../../ops/clock.js';
import { createBumpReplay } from './bumps.js';
import { createCalls } from './calls.js';
import { createFleetWatch } from './fleet-watch.js';
import { createHandover } from './handover.js';
import { createNodeBreakers } from './nodes.js';
import { resilientFace } from './face.js';
import { MIN_SILENCE_MS, type ResilientOptions, type ResilientStores } from './options.js';

export * from './options.js';

export function createResilientStores(o: ResilientOptions): ResilientStores {
  const { primary, fallback, mode, events = {}, topology } = o;
  const probeEvery = o.probeIntervalMs ?? 1000;
  const clock = o.clock ?? systemClock;
  const now = o.now ?? (() => performance.now());
  const loop = o.loopClock ?? createLoopClock();
  const fleet = createFleetWatch({
    mode,
    fleet: o.fleet,
    clock,
    primary,
    fallback,
    everyMs: probeEvery,
    paused: () => nodes.closing() || nodes.degraded(),
  });
  const nodes = createNodeBreakers({
    breaker: {
      probeIntervalMs: probeEvery,
      silenceLimitMs: Math.max(o.replyTimeoutMs ?? 0, MIN_SILENCE_MS),
      failureSpanMs: o.failureSpanMs ?? 500,
      failuresToOpen: o.failuresToOpen ?? 3,
      now,
      loop,
    },
    mode,
    log: o.log,
    events,
    topology,
    connection: o.connection,
    probe,
    onClosing(node) {
      if (mode === 'open') handover.atClose(node);
    },
    liveInstances: fleet.live,
    onRefreshed(dropped) {
      for (const breaker of dropped) handover.owed.delete(breaker);
      // A node forgotten never probes again: what the fallback counted of its slots goes to their owner now.
      if (dropped.length > 0 && mode === 'open') void handover.handOverMoved();
      void bumps.replay();
    },
  });
  const handover = createHandover({ primary, fallback, topology, nodes });
  const calls = createCalls({
    mode,
    events,
    now,
    owed: handover.owed,
    settleOwed: handover.settleOwed,
  });
  const bumps = createBumpReplay({ primary, fallback, topology, nodes, calls });
  fleet.start();

  async function probe(node: string): Promise<boolean> {
    if (!(await (topology ? topology.ping(node, 250) : primary.ready()))) return false;
    await bumps.beforeClose(node);
    // The fallback still answers (half-open) while this hand-over is on its way.
    if (mode === 'open') await handover.beforeClose(node);
    return true;
  }

  return resilientFace({ o, clock, nodes, calls, handover, bumps, fleet, loop });
}

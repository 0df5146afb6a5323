// The fleet's share in open mode (../fleet.ts): this instance beats into the live set while Redis
// answers, remembers the counts Redis answered, and without Redis its fallback admits only this
// instance's share of what was left. Only open mode admits anything without Redis, so only open-mode
// instances count themselves.
import { randomUUID } from 'node:crypto';
import { createFleetShare, FLEET_TTL_MS, type FleetRegistry } from '../fleet.js';
import type { RateLimiter, SharedStores } from '../types.js';
import type { Clock } from '../../ops/clock.js';

export interface FleetWatch {
  /** Instances live when Redis last answered a beat (1 before the first, and without a registry). */
  live(): number;
  /** The primary's spend and gate, each answer remembered as the fallback's starting point. */
  spend: RateLimiter['spend'];
  gate: SharedStores['gate'];
  /** The fallback's limiter, held to this instance's share. */
  fallbackLimiter: RateLimiter;
  /** Starts beating every `everyMs` (and once now). */
  start(): void;
  /** Whether this instance is in the live set (and so should leave it when it closes). */
  readonly registered: boolean;
  stop(): void;
  /** Leaves the live set so the others' shares grow at once (else in FLEET_TTL_MS); never waits long on it. */
  leave(): Promise<void>;
}

export function createFleetWatch(o: {
  mode: 'open' | 'closed';
  fleet?: FleetRegistry;
  clock: Clock;
  primary: SharedStores;
  fallback: SharedStores;
  everyMs: number;
  /** No beat while this holds (closing, or Redis away). */
  paused(): boolean;
}): FleetWatch {
  const { primary } = o;
  const share = createFleetShare(o.clock);
  const fleet = o.mode === 'open' ? o.fleet : undefined;
  const instanceId = randomUUID();
  let beating = false;
  function beat() {
    if (fleet === undefined || beating || o.paused()) return;
    beating = true;
    fleet.beat(instanceId, FLEET_TTL_MS).then(
      (live) => {
        beating = false;
        share.setLive(live);
      },
      () => {
        beating = false; // Redis is judged by the calls; the last count is kept
      },
    );
  }
  let beatTimer: NodeJS.Timeout | undefined;

  return {
    live: () => share.live(),
    spend:
      fleet === undefined
        ? (refs, cost, at) => primary.limiter.spend(refs, cost, at)
        : (refs, cost, at) =>
            primary.limiter.spend(refs, cost, at).then((states) => {
              share.saw(refs, states);
              return states;
            }),
    gate:
      fleet === undefined
        ? (req) => primary.gate(req)
        : (req) =>
            primary.gate(req).then((result) => {
              if (result.kind === 'spent' && req.spend) {
                const { key, ip, month } = result.hit;
                // The month's count too: without it a quota falls back as if nothing of it were spent.
                share.saw(req.spend, month === undefined ? [key, ip] : [key, ip, month]);
              } else if (result.kind === 'peeked') share.saw(req.peek ?? [], result.states);
              return result;
            }),
    fallbackLimiter: fleet === undefined ? o.fallback.limiter : share.limiter(o.fallback.limiter),
    start() {
      beatTimer = fleet === undefined ? undefined : setInterval(beat, o.everyMs);
      beatTimer?.unref();
      beat();
    },
    registered: fleet !== undefined,
    stop: () => clearInterval(beatTimer),
    async leave() {
      if (fleet !== undefined)
        await withinMs(
          fleet.leave(instanceId).catch(() => {}),
          500,
        );
    },
  };
}

function withinMs(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

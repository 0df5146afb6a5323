// Redis failures: a circuit breaker in front of the shared stores. While Redis can be reached, it rules,
// however slowly it answers: a late reply is awaited, never replaced by a guess. CONTRACT section 1
// allows the per-instance fallback only when Redis cannot be reached, and Redis is judged so when
//   - its connection closes (the client's `close` event: Redis killed, restarted, refused), or
//   - it has answered nothing while asked for `replyTimeoutMs` (at least MIN_SILENCE_MS) of time during
//     which the event loop was free to read a reply (./loop-clock.ts): a stalled or blackholed
//     connection. Time the gateway's own loop was blocked does not count, so a busy process or a burst
//     is no outage; or
//   - every call has failed for `failureSpanMs` (at least `failuresToOpen` of them, none succeeding):
//     a Redis that answers only errors.
// Then the breaker opens: calls waiting on Redis and calls to come either fall back to in-memory
// stores per instance (RATE_LIMIT_FAILURE_MODE=open: each instance admits its share of what was left of
// each budget, so the fleet stays near one budget; ./fleet.ts) or fail fast with
// StoreUnavailableError (closed: the gateway answers 503). A probe (PING) every `probeIntervalMs`, and
// at once when the client reconnects, closes the breaker again; the shared counters then rule again.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { createFleetShare, FLEET_TTL_MS, type FleetRegistry } from './fleet.js';
import { createLoopClock, type LoopClock } from './loop-clock.js';
import { LiveList } from '../ops/live-list.js';
import type { LimitStores } from './types.js';

export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

export interface BreakerEvents {
  /** Called once per transition. */
  onDegraded?(degraded: boolean): void;
  /** Called after Redis came back: caches that trusted its versions must be rebuilt. */
  onRecovered?(): void;
  /** Latency of each primary call, in seconds. */
  observe?(op: string, seconds: number, ok: boolean): void;
  /** A call answered without Redis: from the fallback (open) or refused (closed). */
  degradedCall?(mode: 'open' | 'closed'): void;
}

/** The part of a Redis client the breaker watches (ioredis Redis and Cluster both fit). */
export interface ConnectionEvents {
  on(event: 'close' | 'ready', listener: () => void): unknown;
}

export interface ResilientStores extends LimitStores {
  degraded(): boolean;
  /** Gateway instances live when Redis last answered (open mode with a fleet registry; else 1). */
  liveInstances(): number;
}

export interface ResilientOptions {
  primary: LimitStores;
  fallback: LimitStores;
  mode: 'open' | 'closed';
  log: Logger;
  events?: BreakerEvents;
  /**
   * The live set of gateway instances in Redis. In open mode this instance beats into it every
   * `probeIntervalMs` while Redis answers, and without Redis admits its share (./fleet.ts).
   */
  fleet?: FleetRegistry;
  /** The primary's client: its `close` opens the breaker at once, its `ready` starts a probe. */
  connection?: ConnectionEvents;
  probeIntervalMs?: number;
  /** Free event-loop time Redis may go without answering anything while asked (REDIS_COMMAND_TIMEOUT_MS; at least MIN_SILENCE_MS). */
  replyTimeoutMs?: number;
  /** How long calls must keep failing, with none succeeding, before Redis is judged unreachable. */
  failureSpanMs?: number;
  /** ...and how many of them at least. */
  failuresToOpen?: number;
  /** Wall clock in ms (probe spacing, failure span, latency); injected by tests. */
  now?: () => number;
  /** Injected by tests; by default a watchdog on the real event loop. */
  loopClock?: LoopClock;
}

type AsyncMethod = (...args: never[]) => Promise<unknown>;

/**
 * The least silence that counts. Two things make a reachable Redis silent for a while:
 *   - a lost TCP segment. Nothing after it is delivered until it is retransmitted, at least 200 ms
 *     later on Linux (the minimum retransmission timeout; more when the link's round trip varies),
 *     and every reply behind it waits too. At 5 % loss that happens several times a second under
 *     load: a lossy link must not count as an outage.
 *   - a loaded machine keeping Redis off the CPU (silences of 54 and 65 ms of free loop time, every
 *     reply then arriving, in a bench at load average 21 on 2 cores).
 * 650 ms waits for one retransmission with room for a round trip up to ~200 ms and the machine's
 * noise, and still switches within a second of a silent partition or a stall (a killed Redis closes
 * its connection and switches at once).
 */
export const MIN_SILENCE_MS = 650;

/** A call sent to Redis and not answered yet; `divert` answers it without Redis instead. */
interface Waiting {
  divert(): void;
}

export function createResilientStores(o: ResilientOptions): ResilientStores {
  const { primary, fallback, mode, log, events = {} } = o;
  const probeEvery = o.probeIntervalMs ?? 1000;
  const silenceLimitMs = Math.max(o.replyTimeoutMs ?? 0, MIN_SILENCE_MS);
  const failureSpanMs = o.failureSpanMs ?? 500;
  const failuresToOpen = o.failuresToOpen ?? 3;
  const now = o.now ?? (() => performance.now());
  const loop = o.loopClock ?? createLoopClock();
  let open = false;
  let closing = false;
  let nextProbe = 0;
  let probing = false;
  // While open, a timer probes every probeEvery: an idle gateway must find Redis back by itself, or
  // /readyz, keygate_degraded and the first request (503 in closed mode) go on saying it is down.
  let probeTimer: NodeJS.Timeout | undefined;
  // Failed calls since the last success, and when the first of them failed.
  let failures = 0;
  let firstFailureAt = 0;
  // Calls waiting on Redis: a LiveList, not a Set (one add and one delete per request; see there).
  const waiting = new LiveList<Waiting>();
  // Free loop time of Redis's last answer, or of the moment a call started waiting after none did.
  let lastAnswer = loop.now();
  // Versions whose bump could not reach Redis: bumped again before the breaker closes, so a change
  // made during the outage is never hidden by an old cached principal.
  const pendingBumps = new Set<number>();

  // The fleet: how many instances share the budgets, and the counts this one last saw (./fleet.ts).
  // Only open mode admits anything without Redis, so only open-mode instances count themselves.
  const share = createFleetShare();
  const fleet = mode === 'open' ? o.fleet : undefined;
  const instanceId = randomUUID();
  let beating = false;
  function beat() {
    if (fleet === undefined || open || closing || beating) return;
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
  const beatTimer = fleet === undefined ? undefined : setInterval(beat, probeEvery);
  beatTimer?.unref();
  beat();

  function unreachable(reason: string) {
    if (open || closing) return;
    open = true;
    failures = 0;
    nextProbe = now() + probeEvery;
    log.warn({ reason, mode, liveInstances: share.live() }, 'redis unavailable: rate limiting degraded');
    probeTimer = setInterval(() => {
      nextProbe = 0; // the timer is the spacing
      void probe();
    }, probeEvery);
    // Probing must never keep the process (or a test run) alive.
    probeTimer.unref();
    events.onDegraded?.(true);
    // The calls still waiting are answered now, as the ones to come will be.
    for (const call of waiting.take()) call.divert();
  }

  loop.onTick(() => {
    if (open || waiting.size === 0) return;
    const silentMs = loop.now() - lastAnswer;
    if (silentMs > silenceLimitMs) unreachable(`no reply for ${Math.round(silentMs)} ms of free event-loop time`);
  });
  o.connection?.on('close', () => unreachable('connection closed'));
  o.connection?.on('ready', () => {
    nextProbe = 0;
    if (open) void probe();
  });

  function answered(ok: boolean, err?: unknown) {
    lastAnswer = loop.now();
    if (ok) {
      failures = 0;
      return;
    }
    const t = now();
    if (failures++ === 0) firstFailureAt = t;
    if (failures >= failuresToOpen && t - firstFailureAt >= failureSpanMs) {
      unreachable(`calls failing for ${Math.round(t - firstFailureAt)} ms: ${(err as Error)?.message}`);
    }
  }

  async function probe() {
    if (probing || closing || now() < nextProbe) return;
    probing = true;
    try {
      if (await primary.ready()) {
        for (const org of [...pendingBumps]) {
          await primary.versions.bump(org);
          pendingBumps.delete(org);
        }
        open = false;
        clearInterval(probeTimer);
        failures = 0;
        lastAnswer = loop.now();
        log.info({ mode }, 'redis recovered: shared counters rule again');
        events.onRecovered?.();
        events.onDegraded?.(false);
      }
    } catch {
      // still down
    } finally {
      nextProbe = now() + probeEvery;
      probing = false;
    }
  }

  /**
   * The one wrapper of every store method: `viaPrimary` while Redis can be reached, however long it
   * takes; otherwise `viaFallback` (open mode) or StoreUnavailableError (closed mode).
   */
  function guard<F extends AsyncMethod>(op: string, viaPrimary: F, viaFallback: F): F {
    type Result = Awaited<ReturnType<F>>;
    const withoutRedis = (args: Parameters<F>): Promise<Result> => {
      events.degradedCall?.(mode);
      if (mode === 'closed') return Promise.reject(new StoreUnavailableError('rate-limit store unavailable'));
      return viaFallback(...args) as Promise<Result>;
    };
    const guarded = (...args: Parameters<F>): Promise<Result> => {
      if (open) {
        void probe();
        if (open) return withoutRedis(args);
      }
      return new Promise<Result>((resolve, reject) => {
        const started = now();
        const call: Waiting = { divert: () => withoutRedis(args).then(resolve, reject) };
        if (waiting.size === 0) lastAnswer = loop.now();
        const entry = waiting.add(call);
        let reply: Promise<Result>;
        try {
          reply = viaPrimary(...args) as Promise<Result>;
        } catch (err) {
          reply = Promise.reject(err);
        }
        reply.then(
          (value) => {
            if (!waiting.delete(entry)) {
              // Already answered without Redis; but Redis did answer, so probe now rather than on
              // the next tick of the probe's timer: a false trip lasts until the late reply.
              if (open) {
                nextProbe = 0;
                void probe();
              }
              return;
            }
            answered(true);
            events.observe?.(op, (now() - started) / 1000, true);
            resolve(value);
          },
          (err: unknown) => {
            if (!waiting.delete(entry)) return;
            events.observe?.(op, (now() - started) / 1000, false);
            answered(false, err);
            // This call has no answer from Redis: it is answered as in an outage, whether or not
            // the breaker opened.
            call.divert();
          },
        );
      });
    };
    return guarded as unknown as F;
  }

  /** Every method of a group of the primary, guarded, with the same method of the fallback. */
  function guardAll<T extends object>(group: string, viaPrimary: T, viaFallback: T): T {
    const guarded: Record<string, AsyncMethod> = {};
    for (const [name, method] of Object.entries(viaPrimary) as [string, AsyncMethod][]) {
      const spare = (viaFallback as Record<string, AsyncMethod>)[name];
      guarded[name] = guard(`${group}.${name}`, method.bind(viaPrimary), spare.bind(viaFallback));
    }
    return guarded as T;
  }

  // What Redis answered for each counter, kept for the fallback's starting point (open mode only).
  const watched: Pick<LimitStores, 'gate' | 'limiter'> =
    fleet === undefined
      ? primary
      : {
          gate: (req) =>
            primary.gate(req).then((result) => {
              if (result.kind === 'spent' && req.spend) share.saw(req.spend, [result.hit.key, result.hit.ip]);
              else if (result.kind === 'peeked') share.saw(req.peek ?? [], result.states);
              return result;
            }),
          limiter: {
            spend: (refs, cost) =>
              primary.limiter.spend(refs, cost).then((states) => {
                share.saw(refs, states);
                return states;
              }),
          },
        };
  const fallbackLimiter = fleet === undefined ? fallback.limiter : share.limiter(fallback.limiter);

  const versionsUnavailable = async (): Promise<never> => {
    throw new StoreUnavailableError('access versions unavailable');
  };
  const versions = guardAll('versions', primary.versions, { get: versionsUnavailable, bump: versionsUnavailable });

  return {
    degraded: () => open,
    liveInstances: () => share.live(),
    // Degraded, no version can be proven: 'stale' sends the gateway to its database path.
    gate: guard('gate', watched.gate, async (req) => {
      const seconds = await fallback.cooldown.check(req.ip);
      return seconds > 0 ? { kind: 'cooldown', seconds } : { kind: 'stale' };
    }),
    limiter: guardAll('limiter', watched.limiter, fallbackLimiter),
    cooldown: guardAll('cooldown', primary.cooldown, fallback.cooldown),
    versions: {
      get: versions.get,
      async bump(org) {
        try {
          return await versions.bump(org);
        } catch (err) {
          pendingBumps.add(org);
          await fallback.versions.bump(org);
          throw err;
        }
      },
    },
    // Degraded, no version can be proven: null makes the gateway resolve from the database.
    preflight: guard('preflight', primary.preflight, async (ip) => ({
      cooldown: await fallback.cooldown.check(ip),
      version: null,
    })),
    async ready() {
      if (!open) return primary.ready();
      void probe();
      return mode === 'open';
    },
    async close() {
      const leaving = fleet !== undefined && !open;
      closing = true;
      clearInterval(probeTimer);
      clearInterval(beatTimer);
      loop.stop();
      // Leave the live set so the others' shares grow at once (else in FLEET_TTL_MS); never wait long on it.
      if (leaving)
        await withinMs(
          fleet.leave(instanceId).catch(() => {}),
          500,
        );
      await primary.close();
      await fallback.close();
    },
  };
}

function withinMs(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

// A circuit breaker with named states, for one Redis server (./resilient/nodes.ts keeps one per Cluster
// primary, one for a standalone or Sentinel Redis). It judges from evidence the caller hands it:
//
//   closed ──silence / connection closed / failures──▶ open ──probe due──▶ half-open
//     ▲                                                  ▲                     │
//     └───────────────────── probe answered ─────────────┼─────────────────────┤
//                                                        └──── probe failed ───┘
//
//   - closed: calls go to Redis, however slowly it answers. It opens when a call has waited for
//     `silenceLimitMs` of free event-loop time with no reply from this server (./loop-clock.ts: time
//     the loop was blocked proves nothing), when `trip` reports its connection closed, or when every
//     call has failed for `failureSpanMs` (at least `failuresToOpen` of them, none succeeding).
//     Opening diverts every call still waiting (each answers without Redis, as later calls will).
//   - open: calls do not go to Redis. A probe is due every `probeIntervalMs`, by a timer (an idle
//     gateway must find Redis back by itself) and when a call arrives; at once after `probeNow`
//     (a reconnect, or a late reply proving the server answers).
//   - half-open: one probe in flight; calls still do not go to Redis. The probe's answer closes or
//     reopens the breaker.
// `stop` ends every timer; a stopped breaker makes no transition.
import type { LoopClock } from './loop-clock.js';
import { LiveList, type LiveEntry } from '../ops/live-list.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

/** A call sent to Redis and not answered yet; `divert` answers it without Redis instead. */
export interface Waiting {
  divert(): void;
}

export interface BreakerOptions {
  /** Whether the server answers again (and whatever must reach it before calls do); true closes the breaker. */
  probe(): Promise<boolean>;
  probeIntervalMs: number;
  silenceLimitMs: number;
  failureSpanMs: number;
  failuresToOpen: number;
  /** Wall clock in ms (probe spacing, failure span). */
  now(): number;
  /** Free event-loop time; the owner calls `tick` after each of its measurements. */
  loop: LoopClock;
  /** After closed -> open, before the waiting calls are diverted. */
  onOpen?(reason: string): void;
  /** After half-open -> closed. */
  onClose?(): void;
}

export interface Breaker {
  readonly state: BreakerState;
  /** A call about to be sent to the server: it waits in the breaker until `settle` (or a diversion). */
  send(call: Waiting): LiveEntry<Waiting>;
  /** The server answered the call (ok: a reply; else an error). false when it was diverted already. */
  settle(entry: LiveEntry<Waiting>, ok: boolean, err?: unknown): boolean;
  /** Checks the silence of the waiting calls (on every loop-clock tick). */
  tick(): void;
  /** The server is unreachable now (its connection closed). */
  trip(reason: string): void;
  /** While open: probe if one is due. */
  poke(): void;
  /** While open: probe now, not at the next tick of the timer. */
  probeNow(): void;
  stop(): void;
}

export function createBreaker(o: BreakerOptions): Breaker {
  let state: BreakerState = 'closed';
  let stopped = false;
  let nextProbe = 0;
  let probeTimer: NodeJS.Timeout | undefined;
  // Failed calls since the last success, and when the first of them failed.
  let failures = 0;
  let firstFailureAt = 0;
  // Calls waiting on the server: a LiveList, not a Set (one add and one delete per call; see there).
  const waiting = new LiveList<Waiting>();
  // Free loop time of the server's last answer, or of the moment a call started waiting after none did.
  let lastAnswer = o.loop.now();

  function open(reason: string) {
    if (stopped || state !== 'closed') return;
    state = 'open';
    failures = 0;
    nextProbe = o.now() + o.probeIntervalMs;
    probeTimer = setInterval(() => {
      nextProbe = 0; // the timer is the spacing
      void probe();
    }, o.probeIntervalMs);
    // Probing must never keep the process (or a test run) alive.
    probeTimer.unref();
    o.onOpen?.(reason);
    for (const call of waiting.take()) call.divert();
  }

  async function probe() {
    if (state !== 'open' || stopped || o.now() < nextProbe) return;
    state = 'half-open';
    let answers = false;
    try {
      answers = await o.probe();
    } catch {
      // still down
    }
    nextProbe = o.now() + o.probeIntervalMs;
    if (stopped) return;
    if (!answers) {
      state = 'open';
      return;
    }
    state = 'closed';
    clearInterval(probeTimer);
    failures = 0;
    lastAnswer = o.loop.now();
    o.onClose?.();
  }

  function probeNow() {
    nextProbe = 0;
    void probe();
  }

  return {
    get state() {
      return state;
    },
    send(call) {
      if (waiting.size === 0) lastAnswer = o.loop.now();
      return waiting.add(call);
    },
    settle(entry, ok, err) {
      if (!waiting.delete(entry)) {
        // Answered without Redis already; but the server did answer, so probe now rather than on the
        // next tick of the timer: a false trip lasts until the late reply.
        if (ok) probeNow();
        return false;
      }
      lastAnswer = o.loop.now();
      if (ok) {
        failures = 0;
        return true;
      }
      const t = o.now();
      if (failures++ === 0) firstFailureAt = t;
      if (failures >= o.failuresToOpen && t - firstFailureAt >= o.failureSpanMs) {
        open(`calls failing for ${Math.round(t - firstFailureAt)} ms: ${(err as Error)?.message}`);
      }
      return true;
    },
    tick() {
      if (state !== 'closed' || waiting.size === 0) return;
      const silentMs = o.loop.now() - lastAnswer;
      if (silentMs > o.silenceLimitMs) open(`no reply for ${Math.round(silentMs)} ms of free event-loop time`);
    },
    trip: open,
    poke() {
      void probe();
    },
    probeNow,
    stop() {
      stopped = true;
      clearInterval(probeTimer);
    },
  };
}

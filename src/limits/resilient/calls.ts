// Every call to the shared store goes through `run`: to Redis while its server can be reached, however
// slowly it answers (a late reply is awaited, never replaced by a guess); otherwise to the fallback
// (open mode) or refused with StoreUnavailableError (closed mode). docs/decisions.md section 1 allows
// the per-instance fallback only when Redis cannot be reached.
import type { Breaker, Waiting } from '../breaker.js';
import { StoreUnavailableError, type BreakerEvents } from './options.js';

export interface CallsOptions {
  mode: 'open' | 'closed';
  events: BreakerEvents;
  /** Wall clock in ms, for the latency of each call. */
  now(): number;
  /** The servers the fallback spent without, and how to hand them their counts (./handover.ts). */
  owed: ReadonlySet<Breaker>;
  settleOwed(breaker: Breaker): void;
}

export interface Calls {
  run<R>(breaker: Breaker, op: string, viaPrimary: () => Promise<R>, viaFallback: () => Promise<R>): Promise<R>;
  /** A call answered without Redis: `viaFallback` in open mode, StoreUnavailableError in closed mode. */
  withoutRedis<R>(viaFallback: () => Promise<R>): Promise<R>;
  /** Closed mode refuses a request when any of its nodes is down, before any of them spends. */
  anyDown(breakers: Iterable<Breaker>): boolean;
}

export function createCalls(o: CallsOptions): Calls {
  const { mode, events, now, owed } = o;

  const withoutRedis = <R>(viaFallback: () => Promise<R>): Promise<R> => {
    events.degradedCall?.(mode);
    if (mode === 'closed') return Promise.reject(new StoreUnavailableError('rate-limit store unavailable'));
    return viaFallback();
  };

  function run<R>(
    breaker: Breaker,
    op: string,
    viaPrimary: () => Promise<R>,
    viaFallback: () => Promise<R>,
  ): Promise<R> {
    if (breaker.state !== 'closed') {
      breaker.poke();
      return withoutRedis(viaFallback);
    }
    return new Promise<R>((resolve, reject) => {
      const started = now();
      const call: Waiting = { divert: () => withoutRedis(viaFallback).then(resolve, reject) };
      const entry = breaker.send(call);
      let reply: Promise<R>;
      try {
        reply = viaPrimary();
      } catch (err) {
        reply = Promise.reject(err);
      }
      reply.then(
        (value) => {
          if (!breaker.settle(entry, true)) return;
          events.observe?.(op, (now() - started) / 1000, true);
          if (owed.size > 0 && owed.has(breaker)) o.settleOwed(breaker);
          resolve(value);
        },
        (err: unknown) => {
          if (!breaker.settle(entry, false, err)) return;
          events.observe?.(op, (now() - started) / 1000, false);
          // This call has no answer from Redis: it is answered as in an outage, whether or not the
          // breaker opened.
          call.divert();
        },
      );
    });
  }

  function anyDown(breakers: Iterable<Breaker>): boolean {
    for (const breaker of breakers) if (breaker.state !== 'closed') return true;
    return false;
  }

  return { run, withoutRedis, anyDown };
}

// Redis failures (issue 5): a circuit breaker in front of the shared stores. While Redis answers, it
// rules. When a command fails or times out (tens of milliseconds), the breaker opens: requests stop
// paying the timeout, and either fall back to in-memory stores per instance
// (RATE_LIMIT_FAILURE_MODE=open: limits still hold per instance) or fail fast with
// StoreUnavailableError (closed: the gateway answers 503). A probe (PING) every `probeIntervalMs`
// closes the breaker again; the shared counters then rule again.
import type { Logger } from 'pino';
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

export interface ResilientStores extends LimitStores {
  degraded(): boolean;
}

export function createResilientStores(o: {
  primary: LimitStores;
  fallback: LimitStores;
  mode: 'open' | 'closed';
  log: Logger;
  events?: BreakerEvents;
  probeIntervalMs?: number;
  /** Consecutive failures that open the breaker: one slow reply on a busy host is not an outage. */
  failureThreshold?: number;
  now?: () => number;
}): ResilientStores {
  const { primary, fallback, mode, log, events = {} } = o;
  const probeEvery = o.probeIntervalMs ?? 1000;
  const now = o.now ?? (() => performance.now());
  let open = false;
  let failures = 0;
  const threshold = o.failureThreshold ?? 3;
  let nextProbe = 0;
  let probing = false;
  // Versions whose bump could not reach Redis: bumped again before the breaker closes, so a change
  // made during the outage is never hidden by an old cached principal.
  const pendingBumps = new Set<number>();

  function trip(op: string, err: unknown) {
    if (open || ++failures < threshold) return;
    open = true;
    nextProbe = now() + probeEvery;
    log.warn({ op, err: (err as Error)?.message, mode }, 'redis unavailable: rate limiting degraded');
    events.onDegraded?.(true);
  }

  async function probe() {
    if (probing || now() < nextProbe) return;
    probing = true;
    try {
      if (await primary.ready()) {
        for (const org of [...pendingBumps]) {
          await primary.versions.bump(org);
          pendingBumps.delete(org);
        }
        open = false;
        failures = 0;
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

  async function call<T>(op: string, viaPrimary: () => Promise<T>, viaFallback: () => Promise<T>): Promise<T> {
    if (open) {
      void probe();
      if (open) {
        events.degradedCall?.(mode);
        if (mode === 'closed') throw new StoreUnavailableError('rate-limit store unavailable');
        return viaFallback();
      }
    }
    const t0 = now();
    try {
      const r = await viaPrimary();
      failures = 0;
      events.observe?.(op, (now() - t0) / 1000, true);
      return r;
    } catch (err) {
      events.observe?.(op, (now() - t0) / 1000, false);
      trip(op, err);
      events.degradedCall?.(mode);
      if (mode === 'closed') throw new StoreUnavailableError('rate-limit store unavailable');
      return viaFallback();
    }
  }

  return {
    degraded: () => open,
    // Degraded, no version can be proven: 'stale' sends the gateway to its database path.
    gate: (req) =>
      call('gate', () => primary.gate(req), async () => {
        const seconds = await fallback.cooldown.check(req.ip);
        return seconds > 0 ? { kind: 'cooldown', seconds } : { kind: 'stale' };
      }),
    limiter: {
      hit: (k, ip) => call('hit', () => primary.limiter.hit(k, ip), () => fallback.limiter.hit(k, ip)),
      hitOne: (c) => call('hit', () => primary.limiter.hitOne(c), () => fallback.limiter.hitOne(c)),
      peek: (refs) => call('peek', () => primary.limiter.peek(refs), () => fallback.limiter.peek(refs)),
    },
    cooldown: {
      check: (ip) => call('cooldown', () => primary.cooldown.check(ip), () => fallback.cooldown.check(ip)),
      recordFailure: (ip) => call('cooldown', () => primary.cooldown.recordFailure(ip), () => fallback.cooldown.recordFailure(ip)),
    },
    versions: {
      get: (org) => call('version', () => primary.versions.get(org), async () => {
        throw new StoreUnavailableError('access versions unavailable');
      }),
      bump: async (org) => {
        try {
          return await call('version', () => primary.versions.bump(org), async () => {
            throw new StoreUnavailableError('access versions unavailable');
          });
        } catch (err) {
          pendingBumps.add(org);
          await fallback.versions.bump(org);
          throw err;
        }
      },
    },
    // Degraded, no version can be proven: null makes the gateway resolve from the database.
    preflight: (ip, org) =>
      call('preflight', () => primary.preflight(ip, org), async () => ({ cooldown: await fallback.cooldown.check(ip), version: null })),
    async ready() {
      if (!open) return primary.ready();
      void probe();
      return mode === 'open';
    },
    async close() {
      await primary.close();
      await fallback.close();
    },
  };
}

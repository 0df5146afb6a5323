// Steps 3 and 4 of docs/decisions.md section 3 (the address's failed-authentication cooldown, then the key),
// and the counters of step 11, behind one function. The caller hands in `plan`, which decides steps
// 5 to 10 on the resolved principal and names the counters to spend or only read; the resolver then
// does the least I/O it can:
// - a cached principal: one round trip (on a standalone Redis, one script) checks the cooldown and
//   that the principal is still exact (its organization's access version), then spends or reads;
// - otherwise: the cooldown (and the version, when the key's organization is known), the database,
//   then the counters.
// An invalid key counts one failure for the address in the same atomic step that reads its
// cooldown, so parallel failures cannot all slip under the limit. An expired secret is an invalid key
// from the first instant at or after its expiry: the check compares the clock with a number the
// principal holds, on every request, cached or not (no I/O, no grace).
import { keyTypeIn } from './secrets.js';
import type { PrincipalCache } from './cache.js';
import { isExpired, type Principal } from './principal.js';
import type { SharedStores, CounterRef, LayerState } from '../limits/types.js';
import { systemClock, type Clock } from '../ops/clock.js';

/** What step 11 does with its counters: spend one token in each, or only read them. */
export type CounterPlan = { spend: CounterRef[] } | { peek: CounterRef[] };

export type Resolution<D> =
  | { kind: 'cooldown'; seconds: number }
  | { kind: 'invalid' }
  | {
      kind: 'resolved';
      principal: Principal;
      decision: D;
      /** The counters' states, in the plan's order, after spending (spend) or as read (peek). */
      states: LayerState[];
      spent: boolean;
    };

export interface ResolverEvents {
  cache(hit: boolean): void;
  authFailure(kind: 'invalid_key' | 'cooldown'): void;
  /** A request authenticated with this principal's secret at `now` (its last use; see access/last-use.ts). */
  used?(principal: Principal, now: number): void;
}

export interface AccessResolver {
  resolve<D>(
    secret: string,
    /** The key types of the request's interface (its profile's `key.types`). */
    accepted: readonly { name: string; prefix: string }[],
    ip: string,
    plan: (p: Principal) => { decision: D; counters: CounterPlan },
  ): Promise<Resolution<D>>;
}

export function createAccessResolver(
  cache: PrincipalCache,
  stores: SharedStores,
  events: ResolverEvents,
  clock: Clock = systemClock,
): AccessResolver {
  async function count(plan: CounterPlan): Promise<LayerState[]> {
    return 'peek' in plan ? stores.limiter.spend(plan.peek, 0) : stores.limiter.spend(plan.spend, 1);
  }

  async function invalid(ip: string): Promise<Resolution<never>> {
    // One atomic step: a failure is counted only while no cooldown runs; a running one is answered.
    const left = Number((await stores.cooldown.recordFailure(ip)) ?? 0);
    if (left > 0) {
      events.authFailure('cooldown');
      return { kind: 'cooldown', seconds: left };
    }
    events.authFailure('invalid_key');
    return { kind: 'invalid' };
  }

  return {
    async resolve(secret, accepted, ip, plan) {
      const type = keyTypeIn(secret, accepted);
      if (type === null) {
        // A malformed key, or one of the other interface: still the cooldown first.
        const seconds = await stores.cooldown.check(ip);
        if (seconds > 0) {
          events.authFailure('cooldown');
          return { kind: 'cooldown', seconds };
        }
        return invalid(ip);
      }

      let cached = cache.peek(secret);
      // An expired cached secret may be stale (its expiry moved since): read it again below.
      if (cached.principal && isExpired(cached.principal, clock.now())) {
        cache.drop(cached.key);
        cached = { key: cached.key, principal: null };
      }
      // The one-round-trip path. Pairs of counters only: the store's gate spends a key and an address.
      if (cached.principal) {
        const { decision, counters } = plan(cached.principal);
        // A key and an address, and the organization's monthly quota when it has one.
        const pair =
          'spend' in counters
            ? counters.spend.length === 2 || (counters.spend.length === 3 && counters.spend[2].month === true)
            : true;
        if (pair) {
          const spend =
            'spend' in counters
              ? (counters.spend as [CounterRef, CounterRef] | [CounterRef, CounterRef, CounterRef])
              : undefined;
          const g = await stores.gate({
            ip,
            orgId: cached.principal.organizationId,
            version: cached.version,
            spend,
            peek: 'peek' in counters ? counters.peek : undefined,
          });
          if (g.kind === 'cooldown') {
            events.authFailure('cooldown');
            return { kind: 'cooldown', seconds: g.seconds };
          }
          if (g.kind !== 'stale') {
            cache.noteHit();
            events.cache(true);
            events.used?.(cached.principal, clock.now());
            const states =
              g.kind === 'spent'
                ? g.hit.month
                  ? [g.hit.key, g.hit.ip, g.hit.month]
                  : [g.hit.key, g.hit.ip]
                : g.states;
            return { kind: 'resolved', principal: cached.principal, decision, states, spent: g.kind === 'spent' };
          }
          cache.drop(cached.key); // an access change since it was cached: resolve again below
        }
      }

      const found = await cache.lookup(secret, type, ip, cached.key);
      if (found.kind === 'cooldown') {
        events.authFailure('cooldown');
        return { kind: 'cooldown', seconds: found.seconds };
      }
      events.cache(found.kind === 'ok' && found.cached);
      if (found.kind !== 'ok') return invalid(ip);
      const now = clock.now();
      if (isExpired(found.principal, now)) return invalid(ip);
      events.used?.(found.principal, now);
      const { decision, counters } = plan(found.principal);
      return {
        kind: 'resolved',
        principal: found.principal,
        decision,
        states: await count(counters),
        spent: 'spend' in counters,
      };
    },
  };
}

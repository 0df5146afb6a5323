// Redis failures: circuit breakers in front of the shared stores (./breaker.ts: its states and
// transitions). While a Redis server can be reached, it rules, however slowly it answers: a late reply
// is awaited, never replaced by a guess. docs/decisions.md section 1 allows the per-instance fallback only when
// Redis cannot be reached, and a server is judged so when
//   - its connection closes (the client's `close` event: Redis killed, restarted, refused), or
//   - it has answered nothing while asked for `replyTimeoutMs` (at least MIN_SILENCE_MS) of time during
//     which the event loop was free to read a reply (./loop-clock.ts): a stalled or blackholed
//     connection. Time the gateway's own loop was blocked does not count, so a busy process or a burst
//     is no outage; or
//   - every call has failed for `failureSpanMs` (at least `failuresToOpen` of them, none succeeding):
//     a Redis that answers only errors.
// Then its breaker opens: calls waiting on it and calls to come either fall back to in-memory stores
// per instance (RATE_LIMIT_FAILURE_MODE=open: each instance admits its share of what was left of each
// budget, so the fleet stays near one budget; ./fleet.ts) or fail fast with StoreUnavailableError
// (closed: the gateway answers 503). A probe (PING) every `probeIntervalMs`, and at once when the
// client reconnects, closes the breaker again; the shared counters then rule again.
//
// One breaker for a standalone or Sentinel Redis. A Cluster has one per primary (issue 20, defect 2):
// each call is split by the node that owns its keys (the counters of a spend, the cooldown and the
// version of a preflight), so only what lives on an unreachable primary falls back or is refused, and
// a call stalled on one node never makes another look silent. While a node is down the slot map is
// read again every CLUSTER_REFRESH_MS, so its promoted replica is used as soon as it is promoted.
// `degraded()` (keygate_degraded, /readyz's `"redis":"degraded"`) says whether any primary is down.
// The healthy primaries go on answering only with `cluster-require-full-coverage no`: by default every
// node refuses (CLUSTERDOWN) from the moment the failure is agreed until the replica is promoted.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { createFleetShare, FLEET_TTL_MS, type FleetRegistry } from './fleet.js';
import { createBreaker, type Breaker, type Waiting } from './breaker.js';
import { createLoopClock, type LoopClock } from './loop-clock.js';
import type { ClusterTopology } from './redis.js';
import {
  hitOf,
  type CounterRef,
  type CountHandover,
  type GateResult,
  type LayerState,
  type SharedStores,
  type RateLimiter,
} from './types.js';
import { systemClock, type Clock } from '../ops/clock.js';

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

export interface ResilientStores extends SharedStores {
  degraded(): boolean;
  /** Gateway instances live when Redis last answered (open mode with a fleet registry; else 1). */
  liveInstances(): number;
}

export interface ResilientOptions {
  /** With `addCounts`, what the fallback counted during an outage is added to it when it answers again. */
  primary: SharedStores & Partial<Pick<CountHandover, 'addCounts'>>;
  fallback: SharedStores & Partial<CountHandover>;
  mode: 'open' | 'closed';
  log: Logger;
  events?: BreakerEvents;
  /**
   * The live set of gateway instances in Redis. In open mode this instance beats into it every
   * `probeIntervalMs` while Redis answers, and without Redis admits its share (./fleet.ts).
   */
  fleet?: FleetRegistry;
  /** The primary's client: its `close` opens the breaker at once, its `ready` starts a probe (not used with `topology`). */
  connection?: ConnectionEvents;
  /** A Cluster's nodes (RedisStores.topology): one breaker per primary, fed by its own connection's events. */
  topology?: ClusterTopology;
  probeIntervalMs?: number;
  /** Free event-loop time Redis may go without answering anything while asked (REDIS_COMMAND_TIMEOUT_MS; at least MIN_SILENCE_MS). */
  replyTimeoutMs?: number;
  /** How long calls must keep failing, with none succeeding, before Redis is judged unreachable. */
  failureSpanMs?: number;
  /** ...and how many of them at least. */
  failuresToOpen?: number;
  /** Wall clock in ms (probe spacing, failure span, latency); injected by tests. */
  now?: () => number;
  /** The stores' clock, which places counters in windows: one reading for a spend split across a Cluster's nodes. */
  clock?: Clock;
  /** Injected by tests; by default a watchdog on the real event loop. */
  loopClock?: LoopClock;
}

/**
 * The least silence that counts. Two things make a reachable Redis silent for a while:
 *   - a lost TCP segment. Nothing after it is delivered until it is retransmitted, at least 200 ms
 *     later on Linux (the minimum retransmission timeout; more when the link's round trip varies),
 *     and every reply behind it waits too. At 5 % loss that happens several times a second under
 *     load, and now and then a request is held by one and its reply by another, back to back: a
 *     lossy link must not count as an outage.
 *   - a loaded machine keeping Redis off the CPU (silences of 54 and 65 ms of free loop time, every
 *     reply then arriving, in a bench at load average 21 on 2 cores).
 * 900 ms waits for a retransmission each way of up to 400 ms (a round trip that varies by up to
 * ~200 ms) with room for the machine's noise, and still switches within about a second of a silent
 * partition or a stall (a killed Redis closes its connection and switches at once).
 */
export const MIN_SILENCE_MS = 900;

/** How often the Cluster's slot map is read again while one of its primaries is down. */
export const CLUSTER_REFRESH_MS = 200;

export function createResilientStores(o: ResilientOptions): ResilientStores {
  const { primary, fallback, mode, log, events = {}, topology } = o;
  const probeEvery = o.probeIntervalMs ?? 1000;
  const now = o.now ?? (() => performance.now());
  const clock = o.clock ?? systemClock;
  const loop = o.loopClock ?? createLoopClock();
  const settings = {
    probeIntervalMs: probeEvery,
    silenceLimitMs: Math.max(o.replyTimeoutMs ?? 0, MIN_SILENCE_MS),
    failureSpanMs: o.failureSpanMs ?? 500,
    failuresToOpen: o.failuresToOpen ?? 3,
    now,
    loop,
  };
  let closing = false;
  // Versions whose bump could not reach Redis: bumped again before their node's breaker closes (and
  // before any call reads them), so a change made during the outage is never hidden by an old cached
  // principal.
  const pendingBumps = new Set<number>();

  // The fleet: how many instances share the budgets, and the counts this one last saw (./fleet.ts).
  // Only open mode admits anything without Redis, so only open-mode instances count themselves.
  const share = createFleetShare(clock);
  const fleet = mode === 'open' ? o.fleet : undefined;
  const instanceId = randomUUID();
  let beating = false;
  function beat() {
    if (fleet === undefined || closing || beating || degraded()) return;
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

  // One breaker per Redis server: '' for a standalone or Sentinel Redis, `host:port` in a Cluster.
  const breakers = new Map<string, Breaker>();
  function breakerOf(node: string): Breaker {
    let breaker = breakers.get(node);
    if (breaker === undefined) {
      breaker = createBreaker({
        ...settings,
        probe: () => probe(node),
        onOpen(reason) {
          log.warn(
            { reason, mode, liveInstances: share.live(), ...(topology ? { node } : {}) },
            'redis unavailable: rate limiting degraded',
          );
          if (topology) refreshWhileDown();
          changed();
        },
        onClose() {
          log.info({ mode, ...(topology ? { node } : {}) }, 'redis recovered: shared counters rule again');
          events.onRecovered?.();
          changed();
        },
      });
      if (closing) breaker.stop();
      breakers.set(node, breaker);
    }
    return breaker;
  }
  const single = topology ? undefined : breakerOf('');
  const at = {
    counter: (id: string) => single ?? breakerOf(topology!.counter(id)),
    address: (ip: string) => single ?? breakerOf(topology!.address(ip)),
    org: (orgId: number) => single ?? breakerOf(topology!.org(orgId)),
  };

  async function probe(node: string): Promise<boolean> {
    if (!(await (topology ? topology.ping(node, 250) : primary.ready()))) return false;
    for (const org of [...pendingBumps]) {
      if (topology && topology.org(org) !== node) continue;
      await primary.versions.bump(org);
      pendingBumps.delete(org);
    }
    if (mode === 'open') {
      // Until nothing is left: the fallback still answers (half-open) while a hand-over is on its way.
      while (await handOverCounts(node));
      owed.delete(breakers.get(node)!);
    }
    return true;
  }

  // Servers whose counters the fallback spent without them (open mode), their counts not handed over yet.
  // A call Redis fails while its breaker stays closed is answered by the fallback too: the next answer
  // of that server hands the counts over, as the probe does after an outage.
  const owed = new Set<Breaker>();
  function settleOwed(breaker: Breaker): void {
    owed.delete(breaker);
    for (const [node, b] of breakers)
      if (b === breaker) return void handOverCounts(node).catch(() => owed.add(breaker));
  }

  /**
   * What the fallback admitted while this node was away is added to its counters before the breaker
   * closes: without it the shared counter would let the rest of each budget through a second time
   * (31 of 20 in a Sentinel failover). A call Redis counted after all and the fallback counted too is
   * counted twice: the error is on the side of refusing.
   */
  async function handOverCounts(node: string): Promise<boolean> {
    if (fallback.takeCounts === undefined || primary.addCounts === undefined) return false;
    const counts = fallback.takeCounts(topology ? (id) => topology.counter(id) === node : undefined);
    if (counts.length === 0) return false;
    try {
      await primary.addCounts(counts);
      return true;
    } catch (err) {
      await fallback.addCounts?.(counts); // kept for the next probe
      throw err;
    }
  }

  /**
   * A Cluster's counters whose slots now belong to a node that answers (the replica promoted in place
   * of a lost primary): what the fallback counted of them is added there. The lost node's breaker is
   * dropped with it, so its own probe never will; without this the promoted counter lets the rest of
   * the budget through a second time (122 of 100). Sent before the calls that follow on the same
   * connections, so those already count it. What fails is kept, owed to its node's next answer.
   */
  async function handOverMoved(): Promise<void> {
    if (fallback.takeCounts === undefined || primary.addCounts === undefined) return;
    const answering = (node: string) => {
      const breaker = breakers.get(node);
      return breaker === undefined || breaker.state === 'closed';
    };
    const counts = fallback.takeCounts((id) => answering(topology!.counter(id)));
    if (counts.length === 0) return;
    try {
      await primary.addCounts(counts);
    } catch {
      await fallback.addCounts?.(counts);
      for (const { id } of counts) owed.add(breakerOf(topology!.counter(id)));
    }
  }

  function degraded(): boolean {
    if (single) return single.state !== 'closed';
    let primaries: Set<string> | undefined;
    for (const [node, breaker] of breakers) {
      if (breaker.state === 'closed') continue;
      primaries ??= topology!.primaries();
      // '' holds the calls made before the client knew the slot map.
      if (node === '' || primaries.has(node)) return true;
    }
    return false;
  }

  // onDegraded is called once per change of degraded().
  let wasDegraded = false;
  function changed() {
    const now = degraded();
    if (now === wasDegraded) return;
    wasDegraded = now;
    events.onDegraded?.(now);
  }

  // A Cluster node down: read the slot map until no breaker is open on a node that owns slots. A node
  // that no longer owns any (its replica was promoted) is forgotten with its breaker.
  let refreshTimer: NodeJS.Timeout | undefined;
  let refreshing = false;
  function refreshWhileDown() {
    if (refreshTimer !== undefined || closing) return;
    const refresh = async () => {
      if (refreshing) return;
      refreshing = true;
      try {
        await topology!.refresh();
      } finally {
        refreshing = false;
      }
      const primaries = topology!.primaries();
      let moved = false;
      for (const [node, breaker] of breakers) {
        if (!primaries.has(node)) {
          breaker.stop();
          breakers.delete(node);
          owed.delete(breaker);
          moved = true;
        }
      }
      // The node forgotten never probes again: what the fallback counted of its slots goes to their owner now.
      if (moved && mode === 'open') void handOverMoved();
      void replayBumps();
      changed();
      if ([...breakers.values()].every((b) => b.state === 'closed')) {
        clearInterval(refreshTimer);
        refreshTimer = undefined;
      }
    };
    refreshTimer = setInterval(() => void refresh(), CLUSTER_REFRESH_MS);
    refreshTimer.unref();
    void refresh();
  }

  // Bumps still pending whose node answers now (in a Cluster, a promoted replica never probed).
  let replaying: Promise<void> | undefined;
  function replayBumps(): Promise<void> {
    replaying ??= (async () => {
      for (const org of [...pendingBumps]) {
        if (at.org(org).state !== 'closed') continue;
        await primary.versions.bump(org);
        pendingBumps.delete(org);
      }
    })()
      .catch(() => {}) // still pending
      .finally(() => (replaying = undefined));
    return replaying;
  }

  /** Closed mode refuses a request when any of its nodes is down, before any of them spends. */
  function anyDown(breakers: Iterable<Breaker>): boolean {
    for (const breaker of breakers) if (breaker.state !== 'closed') return true;
    return false;
  }

  loop.onTick(() => {
    for (const breaker of breakers.values()) breaker.tick();
  });
  if (topology) {
    // Only a primary's connection counts: a replica's, or a seed's the client drops once it has the
    // slot map, routes no call.
    topology.onNode('close', (node) => {
      if (!closing && topology.primaries().has(node)) breakerOf(node).trip('connection closed');
    });
    topology.onNode('ready', (node) => breakers.get(node)?.probeNow());
  } else {
    o.connection?.on('close', () => single!.trip('connection closed'));
    o.connection?.on('ready', () => single!.probeNow());
  }

  const beatTimer = fleet === undefined ? undefined : setInterval(beat, probeEvery);
  beatTimer?.unref();
  beat();

  const withoutRedis = <R>(viaFallback: () => Promise<R>): Promise<R> => {
    events.degradedCall?.(mode);
    if (mode === 'closed') return Promise.reject(new StoreUnavailableError('rate-limit store unavailable'));
    return viaFallback();
  };

  /**
   * The one wrapper of every call: `viaPrimary` while its Redis server can be reached, however long it
   * takes; otherwise `viaFallback` (open mode) or StoreUnavailableError (closed mode).
   */
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
          if (owed.size > 0 && owed.has(breaker)) settleOwed(breaker);
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

  // What Redis answered for each counter, kept for the fallback's starting point (open mode only).
  const watchedSpend: RateLimiter['spend'] =
    fleet === undefined
      ? (refs, cost, at) => primary.limiter.spend(refs, cost, at)
      : (refs, cost, at) =>
          primary.limiter.spend(refs, cost, at).then((states) => {
            share.saw(refs, states);
            return states;
          });
  const watchedGate: SharedStores['gate'] =
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
          });
  const fallbackLimiter = fleet === undefined ? fallback.limiter : share.limiter(fallback.limiter);

  const spendOn = (breaker: Breaker, refs: CounterRef[], cost: 0 | 1, at?: number) =>
    run(
      breaker,
      'limiter.spend',
      () => watchedSpend(refs, cost, at),
      () => {
        // Only open mode gets here (closed mode refuses without the fallback).
        if (cost === 1) owed.add(breaker);
        return fallbackLimiter.spend(refs, cost, at);
      },
    );

  /**
   * A Cluster's spend, one call per node: counters on a healthy node are spent in Redis, the others
   * fall back. The monthly quota's counter (last) is spent once the others admitted the request, as the
   * stores do (CounterRef).
   */
  async function spendByNode(refs: CounterRef[], cost: 0 | 1): Promise<LayerState[]> {
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
    if (mode === 'closed' && anyDown([...groups.keys(), ...(month ? [at.counter(month.id)] : [])]))
      return withoutRedis(() => fallbackLimiter.spend(refs, cost, when));
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

  /** An organization's version for the gate and the preflight; null when it cannot be proven. */
  async function versionOf(orgId: number): Promise<number | null> {
    if (pendingBumps.size > 0 && pendingBumps.has(orgId)) {
      await replayBumps();
      if (pendingBumps.has(orgId)) return withoutRedis(async () => null);
    }
    return run(
      at.org(orgId),
      'versions.get',
      () => primary.versions.get(orgId),
      async () => null,
    );
  }

  const cooldownCheck = (ip: string) =>
    run(
      at.address(ip),
      'cooldown.check',
      () => primary.cooldown.check(ip),
      () => fallback.cooldown.check(ip),
    );

  /** A Cluster's preflight: the cooldown and the version each from its own node. */
  async function preflightByNode(ip: string, orgId: number | null) {
    if (mode === 'closed' && anyDown(orgId === null ? [at.address(ip)] : [at.address(ip), at.org(orgId)]))
      return withoutRedis(() => fallback.preflight(ip, orgId));
    const [cooldown, version] = await Promise.all([cooldownCheck(ip), orgId === null ? null : versionOf(orgId)]);
    return { cooldown, version };
  }

  const versionsUnavailable = async (): Promise<never> => {
    throw new StoreUnavailableError('access versions unavailable');
  };

  return {
    degraded,
    liveInstances: () => share.live(),
    gate: single
      ? (req) => {
          // Degraded, no version can be proven: 'stale' sends the gateway to its database path.
          const withoutVersion = async (): Promise<GateResult> => {
            const seconds = await fallback.cooldown.check(req.ip);
            return seconds > 0 ? { kind: 'cooldown', seconds } : { kind: 'stale' };
          };
          if (pendingBumps.size > 0 && pendingBumps.has(req.orgId))
            return replayBumps().then(() =>
              pendingBumps.has(req.orgId)
                ? withoutRedis(withoutVersion)
                : run(single, 'gate', () => watchedGate(req), withoutVersion),
            );
          return run(single, 'gate', () => watchedGate(req), withoutVersion);
        }
      : async (req) => {
          // The Cluster's gate is the preflight and then the spend (or the reads), as the stores do it.
          const pre = await preflightByNode(req.ip, req.orgId);
          if (pre.cooldown > 0) return { kind: 'cooldown', seconds: pre.cooldown };
          if (pre.version !== req.version) return { kind: 'stale' };
          if (req.spend) {
            const [key, ip, month] = await spendByNode(req.spend, 1);
            return { kind: 'spent', hit: hitOf(key, ip, month) };
          }
          return { kind: 'peeked', states: await spendByNode(req.peek ?? [], 0) };
        },
    limiter: {
      spend: single ? (refs, cost) => spendOn(single, refs, cost) : spendByNode,
    },
    cooldown: {
      check: cooldownCheck,
      recordFailure: (ip) =>
        run(
          at.address(ip),
          'cooldown.recordFailure',
          () => primary.cooldown.recordFailure(ip),
          () => fallback.cooldown.recordFailure(ip),
        ),
    },
    versions: {
      get: (orgId) => run(at.org(orgId), 'versions.get', () => primary.versions.get(orgId), versionsUnavailable),
      async bump(orgId) {
        try {
          const version = await run(
            at.org(orgId),
            'versions.bump',
            () => primary.versions.bump(orgId),
            versionsUnavailable,
          );
          pendingBumps.delete(orgId);
          return version;
        } catch (err) {
          pendingBumps.add(orgId);
          await fallback.versions.bump(orgId);
          throw err;
        }
      },
    },
    preflight: single
      ? (ip, orgId) =>
          run(
            single,
            'preflight',
            () => primary.preflight(ip, orgId),
            // Degraded, no version can be proven: null makes the gateway resolve from the database.
            async () => ({ cooldown: await fallback.cooldown.check(ip), version: null }),
          )
      : preflightByNode,
    async ready() {
      if (!degraded()) return primary.ready();
      for (const breaker of breakers.values()) breaker.poke();
      return mode === 'open';
    },
    async close() {
      const leaving = fleet !== undefined && !degraded();
      closing = true;
      for (const breaker of breakers.values()) breaker.stop();
      clearInterval(refreshTimer);
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

// The breakers in front of the shared stores (src/limits/resilient/), on a fake wall clock and a
// loop clock driven by hand: when Redis counts as unreachable (docs/decisions.md section 1) and when it does not.
import { EventEmitter } from 'node:events';
import { beforeEach, describe, expect, it, vi, type Mock } from 'vitest';
import { createLogger } from '../../src/ops/logger.js';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import { createLoopClock } from '../../src/limits/loop-clock.js';
import type { ClusterTopology } from '../../src/limits/redis-cluster/topology.js';
import {
  CLUSTER_REFRESH_MS,
  createResilientStores,
  MIN_SILENCE_MS,
  StoreUnavailableError,
  type ResilientStores,
} from '../../src/limits/resilient/index.js';
import {
  spendOne,
  spendPair,
  type CounterRef,
  type CountHandover,
  type LayerState,
  type SharedStores,
} from '../../src/limits/types.js';
import type { Clock } from '../../src/ops/clock.js';

const TICK_MS = 10;
// The breaker's silence limit in these tests (REDIS_COMMAND_TIMEOUT_MS above the floor).
const LIMIT = MIN_SILENCE_MS + 50;
const key: CounterRef = { id: 'k:1:read', limit: 20 };
const ip: CounterRef = { id: 'ip:192.0.2.1', limit: 100 };

/** A promise the test settles by hand: a Redis reply on its way. */
function pendingReply<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

let wall: number;
let loop: ReturnType<typeof createLoopClock>;
let primary: SharedStores;
let fallback: SharedStores;
let connection: EventEmitter;
let events: {
  onDegraded: Mock<(degraded: boolean) => void>;
  onRecovered: Mock<() => void>;
  degradedCall: Mock<(mode: 'open' | 'closed') => void>;
};

function breaker(mode: 'open' | 'closed'): ResilientStores {
  return createResilientStores({
    primary,
    fallback,
    mode,
    events,
    connection,
    log: createLogger('silent'),
    replyTimeoutMs: LIMIT,
    now: () => wall,
    loopClock: loop,
  });
}

/** `ms` of wall time during which the loop ran freely (the watchdog on time). */
function freeTime(ms: number) {
  for (let t = 0; t < ms; t += TICK_MS) {
    wall += TICK_MS;
    loop.tick();
  }
}

/** `ms` of wall time during which the loop was blocked (the watchdog ran that much late). */
function blocked(ms: number) {
  wall += ms;
  loop.tick();
}

beforeEach(() => {
  wall = 1_000_000;
  loop = createLoopClock({ tickMs: TICK_MS, wallNow: () => wall, timer: false });
  primary = createMemoryStores({ sweepIntervalMs: 0 });
  fallback = createMemoryStores({ sweepIntervalMs: 0 });
  connection = new EventEmitter();
  events = { onDegraded: vi.fn(), onRecovered: vi.fn(), degradedCall: vi.fn() };
});

describe('a busy event loop is not a Redis outage', () => {
  it('a reply late only because the loop was blocked is awaited, and answers', async () => {
    const reply = pendingReply<LayerState[]>();
    primary.limiter.spend = () => reply.promise;
    const stores = breaker('closed');
    const call = stores.limiter.spend([key, ip], 1);
    // Two seconds of stalls, and just under the limit of free time in all: the reply may not have been read yet.
    for (let n = 0; n < 20; n++) blocked(100);
    freeTime(LIMIT - 10);
    const answer = [
      { limit: 20, used: 3, remaining: 17, reset: 60 },
      { limit: 100, used: 3, remaining: 97, reset: 60 },
    ];
    reply.resolve(answer);
    expect(await call).toBe(answer);
    expect(stores.degraded()).toBe(false);
    expect(events.degradedCall).not.toHaveBeenCalled();
    expect(events.onDegraded).not.toHaveBeenCalled();
  });

  it('a stream of replies keeps Redis reachable however long each one waits', async () => {
    const replies = Array.from({ length: 10 }, () => pendingReply<number>());
    let n = 0;
    primary.versions.get = () => replies[n++].promise;
    const stores = breaker('open');
    const calls = replies.map(() => stores.versions.get(1));
    for (const reply of replies) {
      freeTime(250); // each reply takes 250 ms of free time; all of them together 2.5 s
      reply.resolve(7);
      await settle();
    }
    expect(await Promise.all(calls)).toEqual(Array(10).fill(7));
    expect(events.degradedCall).not.toHaveBeenCalled();
  });
});

describe('an unreachable Redis', () => {
  it('no reply for the timeout in free loop time: waiting calls and later ones fall back (open mode)', async () => {
    const reply = pendingReply<number>();
    primary.cooldown.check = () => reply.promise;
    const stores = breaker('open');
    await fallback.cooldown.recordFailure('192.0.2.9');
    const waiting = stores.cooldown.check('192.0.2.9');
    freeTime(LIMIT - 10);
    expect(stores.degraded()).toBe(false);
    freeTime(20);
    expect(stores.degraded()).toBe(true);
    expect(await waiting).toBe(0); // the fallback's answer: its failure does not start a cooldown
    expect(await stores.cooldown.recordFailure('192.0.2.9')).toBe(0);
    expect(await fallback.cooldown.check('192.0.2.9')).toBe(0);
    expect(events.onDegraded.mock.calls).toEqual([[true]]);
    expect(events.degradedCall).toHaveBeenCalledTimes(2);
    reply.resolve(5); // the late reply is not used (its call was answered), but proves Redis answers:
    await settle(); // the breaker probes at once and closes
    expect(events.degradedCall).toHaveBeenCalledTimes(2);
    expect(events.onDegraded.mock.calls).toEqual([[true], [false]]);
  });

  it('closed mode refuses instead, waiting calls included', async () => {
    primary.limiter.spend = () => new Promise(() => {});
    const stores = breaker('closed');
    const waiting = stores.limiter.spend([key], 0);
    freeTime(LIMIT + 10);
    await expect(waiting).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(stores.gate({ ip: '192.0.2.1', orgId: 1, version: 0, peek: [] })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(events.degradedCall.mock.calls).toEqual([['closed'], ['closed']]);
  });

  it('a closed connection opens the breaker at once; a reconnect probes at once and replays version bumps', async () => {
    const stores = breaker('open');
    connection.emit('close');
    expect(stores.degraded()).toBe(true);
    // Degraded: no version can be proven, so the gate sends the gateway to its database path.
    expect(await stores.gate({ ip: '192.0.2.1', orgId: 1, version: 0, spend: [key, ip] })).toEqual({ kind: 'stale' });
    expect(await stores.preflight('192.0.2.1', 4)).toEqual({ cooldown: 0, version: null });
    await expect(stores.versions.bump(4)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await primary.versions.get(4)).toBe(0);
    connection.emit('ready');
    await settle();
    expect(stores.degraded()).toBe(false);
    expect(await primary.versions.get(4)).toBe(1); // the bump made during the outage
    expect(events.onRecovered).toHaveBeenCalledTimes(1);
    expect(events.onDegraded.mock.calls).toEqual([[true], [false]]);
    expect(await stores.versions.get(4)).toBe(1);
  });

  it('what the fallback counted while Redis was away reaches Redis before the breaker closes (open mode)', async () => {
    const stores = breaker('open');
    for (let n = 0; n < 3; n++) await spendPair(stores.limiter, key, ip);
    connection.emit('close');
    for (let n = 0; n < 2; n++) await spendPair(stores.limiter, key, ip);
    connection.emit('ready');
    await settle();
    expect(stores.degraded()).toBe(false);
    // Redis now holds every request of the window: 3 it counted, 2 the fallback did.
    expect((await primary.limiter.spend([key, ip], 0)).map((s) => s.used)).toEqual([5, 5]);
    expect((await spendPair(stores.limiter, key, ip)).key.used).toBe(6);
    // Handed over once: a second outage starts from what Redis holds, not from the old counts again.
    connection.emit('close');
    connection.emit('ready');
    await settle();
    expect((await primary.limiter.spend([key], 0))[0].used).toBe(6);
  });

  it('a call Redis failed while the breaker stayed closed is counted by the fallback, and reaches Redis at its next answer', async () => {
    const stores = breaker('open');
    const spend = primary.limiter.spend.bind(primary.limiter);
    let failing = true;
    primary.limiter.spend = (refs, cost, at) =>
      failing ? Promise.reject(new Error('READONLY replica')) : spend(refs, cost, at);
    await spendPair(stores.limiter, key, ip); // answered by the fallback, the breaker still closed
    expect(stores.degraded()).toBe(false);
    failing = false;
    await spendPair(stores.limiter, key, ip);
    await settle();
    expect((await primary.limiter.spend([key, ip], 0)).map((s) => s.used)).toEqual([2, 2]);
  });

  it('probes once a second while open, and stays open while the probe fails', async () => {
    let answers = false;
    primary.ready = async () => answers;
    const stores = breaker('open');
    connection.emit('close');
    await spendOne(stores.limiter, key);
    await settle();
    expect(stores.degraded()).toBe(true);
    wall += 1_000;
    await spendOne(stores.limiter, key); // starts a probe that fails
    await settle();
    expect(stores.degraded()).toBe(true);
    answers = true;
    await spendOne(stores.limiter, key); // too soon for the next probe
    await settle();
    expect(stores.degraded()).toBe(true);
    wall += 1_000;
    await spendOne(stores.limiter, key);
    await settle();
    expect(stores.degraded()).toBe(false);
    // Redis's counter again: the fallback's 4, handed over as the breaker closed, and this one.
    expect((await spendOne(stores.limiter, key)).used).toBe(5);
  });

  /** Open mode, Redis away, one request counted by the fallback; Redis's own hand-over entry point. */
  async function outageWithOneCount() {
    const stores = breaker('open');
    connection.emit('close');
    await spendOne(stores.limiter, key); // the fallback's
    const redis = primary as SharedStores & CountHandover;
    return { stores, redis, add: redis.addCounts.bind(redis) };
  }

  it('what the fallback admits while its counts are being handed over reaches Redis too', async () => {
    const { stores, redis, add } = await outageWithOneCount();
    const landing = pendingReply<void>();
    redis.addCounts = async (counts) => {
      await landing.promise;
      return add(counts);
    };
    connection.emit('ready'); // the probe answers and starts handing the count over
    await settle();
    expect(stores.degraded()).toBe(true);
    await spendOne(stores.limiter, key); // still the fallback's: the breaker is half-open
    landing.resolve();
    await settle();
    await settle();
    expect(stores.degraded()).toBe(false);
    expect((await primary.limiter.spend([key], 0))[0].used).toBe(2);
  });

  it('a hand-over under steady load ends: the breaker closes while requests keep coming, and every count reaches Redis', async () => {
    const { stores, redis, add } = await outageWithOneCount();
    let passes = 0;
    let admitted = 1;
    redis.addCounts = async (counts) => {
      passes++;
      // A request arrives during every round trip of the hand-over (8 clients in a loop do), answered
      // by the fallback while the breaker is half-open. Bounded, so that a hand-over waiting for a
      // quiet moment ends here rather than never.
      if (passes <= 100) {
        await spendOne(stores.limiter, key);
        admitted++;
      }
      return add(counts);
    };
    connection.emit('ready');
    for (let n = 0; n < 5; n++) await settle();
    expect(stores.degraded()).toBe(false);
    // Closed after a bounded number of round trips, not when the clients pause.
    expect(passes).toBeLessThanOrEqual(3);
    expect((await primary.limiter.spend([key], 0))[0].used).toBe(admitted);
  });

  it('calls that keep failing open it after the failure span, not after a few quick errors', async () => {
    primary.limiter.spend = async () => {
      throw new Error('ERR something');
    };
    const stores = breaker('open');
    // Each failed call is answered by the fallback, whatever the breaker decides.
    for (let n = 0; n < 5; n++) expect((await spendOne(stores.limiter, key)).used).toBe(n + 1);
    expect(stores.degraded()).toBe(false);
    wall += 499;
    await spendOne(stores.limiter, key);
    expect(stores.degraded()).toBe(false);
    wall += 1;
    await spendOne(stores.limiter, key);
    expect(stores.degraded()).toBe(true);
  });

  it('a success between failures starts the span again', async () => {
    let fail = true;
    primary.limiter.spend = async (counters, cost) => {
      if (fail) throw new Error('ERR something');
      return fallback.limiter.spend(counters, cost);
    };
    const stores = breaker('open');
    await spendOne(stores.limiter, key);
    await spendOne(stores.limiter, key);
    wall += 400;
    fail = false;
    await spendOne(stores.limiter, key);
    fail = true;
    wall += 400;
    await spendOne(stores.limiter, key);
    await spendOne(stores.limiter, key);
    await spendOne(stores.limiter, key);
    expect(stores.degraded()).toBe(false);
  });
});

describe('the silence that counts', () => {
  it('is never under MIN_SILENCE_MS, whatever REDIS_COMMAND_TIMEOUT_MS says', async () => {
    primary.limiter.spend = () => new Promise(() => {});
    const stores = createResilientStores({
      primary,
      fallback,
      mode: 'open',
      events,
      connection,
      log: createLogger('silent'),
      replyTimeoutMs: 50,
      now: () => wall,
      loopClock: loop,
    });
    void stores.limiter.spend([key], 0);
    freeTime(MIN_SILENCE_MS - 10);
    expect(stores.degraded()).toBe(false);
    freeTime(20);
    expect(stores.degraded()).toBe(true);
  });
});

describe('one generic wrapper', () => {
  it('guards every method of the limiter and the cooldown, passing arguments and results through', async () => {
    const stores = breaker('closed');
    expect(await spendPair(stores.limiter, key, ip)).toMatchObject({
      allowed: true,
      key: { used: 1 },
      ip: { used: 1 },
    });
    expect(await spendOne(stores.limiter, key)).toMatchObject({ used: 2 });
    expect((await stores.limiter.spend([key, ip], 0)).map((s) => s.used)).toEqual([2, 1]);
    for (let n = 0; n < 5; n++) expect(await stores.cooldown.recordFailure('192.0.2.5')).toBe(0);
    expect(await stores.cooldown.recordFailure('192.0.2.5')).toBe(900);
    expect(await stores.cooldown.check('192.0.2.5')).toBe(900);
    expect(await stores.versions.bump(3)).toBe(1);
    expect(await stores.preflight('192.0.2.5', 3)).toEqual({ cooldown: 900, version: 1 });
    expect(events.degradedCall).not.toHaveBeenCalled();
  });
});

/** A Cluster of named nodes: each tag lives on the node `nodeOf` says; the test closes and pings them. */
function fakeCluster(nodeOf: (tag: string) => string, nodes: string[]) {
  const listeners = { close: [] as ((node: string) => void)[], ready: [] as ((node: string) => void)[] };
  const state = {
    primaries: new Set(nodes),
    answering: new Set(nodes),
    refreshes: 0,
    close: (node: string) => listeners.close.forEach((listener) => listener(node)),
  };
  const topology: ClusterTopology = {
    counter: (id) => nodeOf(id),
    address: (address) => nodeOf(address),
    org: (orgId) => nodeOf(String(orgId)),
    primaries: () => new Set(state.primaries),
    ping: async (node) => state.answering.has(node),
    refresh: async () => void state.refreshes++,
    onNode: (event, listener) => void listeners[event].push(listener),
  };
  return { topology, state };
}

describe('a Redis Cluster: one breaker per primary', () => {
  // Key 1's counter and org 1's version on node a; the IP's counter and cooldown on node b.
  const nodeOf = (tag: string) => (tag === 'k:1:read' || tag === '1' ? 'a' : 'b');
  const cluster = () => fakeCluster(nodeOf, ['a', 'b']);
  function clusterBreaker(mode: 'open' | 'closed', topology: ClusterTopology, clock?: Clock): ResilientStores {
    return createResilientStores({
      primary,
      fallback,
      clock,
      mode,
      events,
      topology,
      log: createLogger('silent'),
      replyTimeoutMs: LIMIT,
      now: () => wall,
      loopClock: loop,
    });
  }

  it('a call stalled on one node does not make another silent', async () => {
    const { topology } = cluster();
    const spend = primary.limiter.spend.bind(primary.limiter);
    // Node b stalls; node a answers each call at once.
    primary.limiter.spend = (refs, cost) => (refs[0].id === ip.id ? new Promise(() => {}) : spend(refs, cost));
    const stores = clusterBreaker('closed', topology);
    const stalled = stores.limiter.spend([key, ip], 1);
    freeTime(LIMIT + 10);
    await expect(stalled).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(stores.degraded()).toBe(true);
    // Node a was asked too, and answered: its breaker is closed, its counters still in Redis.
    expect((await stores.limiter.spend([key], 1))[0].used).toBe(2);
    expect(events.onDegraded.mock.calls).toEqual([[true]]);
  });

  it('only the counters on a node that is down fall back (open mode), the others stay exact', async () => {
    const { topology, state } = cluster();
    const stores = clusterBreaker('open', topology);
    await spendPair(stores.limiter, key, ip);
    state.close('b');
    expect(stores.degraded()).toBe(true);
    const hit = await spendPair(stores.limiter, key, ip);
    expect(hit.key.used).toBe(2); // Redis's counter (node a)
    expect(hit.ip.used).toBe(1); // the fallback's (node b)
    expect(await primary.limiter.spend([ip], 0)).toMatchObject([{ used: 1 }]);
    expect(events.degradedCall.mock.calls).toEqual([['open']]);
  });

  it('closed mode refuses only the requests that touch a node that is down', async () => {
    const { topology, state } = cluster();
    const stores = clusterBreaker('closed', topology);
    state.close('a');
    await expect(stores.limiter.spend([key, ip], 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(stores.preflight('192.0.2.1', 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await stores.limiter.spend([ip], 1)).toMatchObject([{ used: 1 }]);
    expect(await stores.preflight('192.0.2.1', 2)).toEqual({ cooldown: 0, version: 0 });
    expect(await stores.cooldown.recordFailure('192.0.2.1')).toBe(0);
  });

  it('the gate splits the same way: a version on a node that is down sends the gateway to its database', async () => {
    const { topology, state } = cluster();
    const stores = clusterBreaker('open', topology);
    expect(await stores.gate({ ip: '192.0.2.1', orgId: 1, version: 0, spend: [key, ip] })).toMatchObject({
      kind: 'spent',
      hit: { allowed: true, key: { used: 1 }, ip: { used: 1 } },
    });
    state.close('a');
    expect(await stores.gate({ ip: '192.0.2.1', orgId: 1, version: 0, spend: [key, ip] })).toEqual({ kind: 'stale' });
    expect(await stores.gate({ ip: '192.0.2.1', orgId: 2, version: 0, peek: [ip] })).toMatchObject({
      kind: 'peeked',
      states: [{ used: 1 }],
    });
  });

  it('a node that loses its slots (its replica promoted) is forgotten; a pending bump reaches the new owner first', async () => {
    let owner = 'a';
    const { topology, state } = fakeCluster((tag) => (tag === '1' ? owner : 'b'), ['a', 'b']);
    const stores = clusterBreaker('closed', topology);
    state.close('a');
    state.answering.delete('a');
    await expect(stores.versions.bump(1)).rejects.toBeInstanceOf(StoreUnavailableError);
    await settle();
    expect(state.refreshes).toBeGreaterThan(0); // the slot map is read again at once
    expect(stores.degraded()).toBe(true);
    // The replica c is promoted: the next refresh finds it.
    owner = 'c';
    state.primaries = new Set(['b', 'c']);
    await new Promise((resolve) => setTimeout(resolve, CLUSTER_REFRESH_MS + 50));
    expect(stores.degraded()).toBe(false);
    expect(events.onDegraded.mock.calls).toEqual([[true], [false]]);
    expect(await primary.versions.get(1)).toBe(1); // the bump made while a was down
    expect(await stores.preflight('192.0.2.1', 1)).toEqual({ cooldown: 0, version: 1 });
  });

  it('what the fallback counted on a lost node reaches the replica promoted in its place (open mode)', async () => {
    let ipNode = 'b';
    const { topology, state } = fakeCluster((tag) => (tag === 'k:1:read' || tag === '1' ? 'a' : ipNode), ['a', 'b']);
    const stores = clusterBreaker('open', topology);
    for (let n = 0; n < 3; n++) await spendPair(stores.limiter, key, ip);
    state.close('b');
    state.answering.delete('b');
    await settle();
    for (let n = 0; n < 2; n++) await spendPair(stores.limiter, key, ip);
    // b's replica c is promoted: b is never probed again, and is forgotten at the next refresh.
    ipNode = 'c';
    state.primaries = new Set(['a', 'c']);
    await new Promise((resolve) => setTimeout(resolve, CLUSTER_REFRESH_MS + 50));
    expect(stores.degraded()).toBe(false);
    expect(await primary.limiter.spend([ip], 0)).toMatchObject([{ used: 5 }]);
    expect((await spendPair(stores.limiter, key, ip)).ip.used).toBe(6);
  });

  it("one request's layers on two nodes land in one window, though the clock turns the minute between the calls", async () => {
    // Each reading of this clock is 1 ms later: the first node's call reads 12:00:59.999, the second's 12:01:00.000.
    let t = Date.UTC(2026, 10, 26, 12, 0, 59, 999);
    const clock = { now: () => t++ };
    primary = createMemoryStores({ sweepIntervalMs: 0, clock });
    const { topology } = cluster();
    const stores = clusterBreaker('closed', topology, clock);
    const [keyState, ipState] = await stores.limiter.spend([key, ip], 1);
    expect(keyState.reset).toBe(ipState.reset);
  });

  it('a replica closing its connection is no outage', () => {
    const { topology, state } = cluster();
    const stores = clusterBreaker('closed', topology);
    state.close('replica-of-a');
    expect(stores.degraded()).toBe(false);
    expect(events.onDegraded).not.toHaveBeenCalled();
  });
});

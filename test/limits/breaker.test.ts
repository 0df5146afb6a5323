// The generic circuit breaker (src/limits/breaker.ts): its named states and every transition, on a fake
// wall clock and a loop clock driven by hand.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBreaker, type Breaker, type BreakerState } from '../../src/limits/breaker.js';
import { createLoopClock } from '../../src/limits/loop-clock.js';
import { MIN_SILENCE_MS } from '../../src/limits/resilient/index.js';

const TICK_MS = 10;
// The product's floor, so these transitions are the ones a gateway makes.
const SILENCE_MS = MIN_SILENCE_MS;
const PROBE_MS = 1_000;

let wall: number;
let loop: ReturnType<typeof createLoopClock>;
let probeAnswer: { resolve(ok: boolean): void; reject(err: unknown): void } | undefined;
let probes: number;
let opened: string[];
let closed: number;
let diverted: number;

function make(): Breaker {
  return createBreaker({
    probe: () => {
      probes++;
      return new Promise<boolean>((resolve, reject) => (probeAnswer = { resolve, reject }));
    },
    probeIntervalMs: PROBE_MS,
    silenceLimitMs: SILENCE_MS,
    failureSpanMs: 500,
    failuresToOpen: 3,
    now: () => wall,
    loop,
    onOpen: (reason) => opened.push(reason),
    onClose: () => closed++,
  });
}

const call = () => ({ divert: () => void diverted++ });
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** `ms` of wall time during which the loop ran freely, the breaker checking on each tick. */
function freeTime(b: Breaker, ms: number) {
  for (let t = 0; t < ms; t += TICK_MS) {
    wall += TICK_MS;
    loop.tick();
    b.tick();
  }
}

/** `ms` of wall time during which the loop was blocked. */
function blocked(b: Breaker, ms: number) {
  wall += ms;
  loop.tick();
  b.tick();
}

async function toOpen(b: Breaker) {
  b.trip('connection closed');
}
async function toHalfOpen(b: Breaker) {
  b.trip('connection closed');
  b.probeNow();
}

beforeEach(() => {
  wall = 1_000_000;
  loop = createLoopClock({ tickMs: TICK_MS, wallNow: () => wall, timer: false });
  probeAnswer = undefined;
  probes = 0;
  opened = [];
  closed = 0;
  diverted = 0;
});

interface Row {
  from: BreakerState;
  event: string;
  to: BreakerState;
  /** Puts the breaker in `from`. */
  setup(b: Breaker): Promise<void> | void;
  /** The event. */
  act(b: Breaker): Promise<void> | void;
}

const transitions: Row[] = [
  {
    from: 'closed',
    event: 'a call unanswered for the silence limit of free loop time',
    to: 'open',
    setup: () => {},
    act: (b) => {
      b.send(call());
      freeTime(b, SILENCE_MS + TICK_MS);
    },
  },
  {
    from: 'closed',
    event: 'a call unanswered just under the silence limit',
    to: 'closed',
    setup: () => {},
    act: (b) => {
      b.send(call());
      freeTime(b, SILENCE_MS - TICK_MS);
    },
  },
  {
    from: 'closed',
    event: 'a call unanswered for seconds of a blocked loop',
    to: 'closed',
    setup: () => {},
    act: (b) => {
      b.send(call());
      for (let n = 0; n < 30; n++) blocked(b, 100);
    },
  },
  {
    from: 'closed',
    event: 'silence with no call waiting',
    to: 'closed',
    setup: () => {},
    act: (b) => freeTime(b, 3 * SILENCE_MS),
  },
  {
    from: 'closed',
    event: 'the connection closed',
    to: 'open',
    setup: () => {},
    act: (b) => b.trip('connection closed'),
  },
  {
    from: 'closed',
    event: 'three failures over the failure span',
    to: 'open',
    setup: () => {},
    act: (b) => {
      for (let n = 0; n < 3; n++) {
        b.settle(b.send(call()), false, new Error('ERR'));
        wall += 250;
      }
    },
  },
  {
    from: 'closed',
    event: 'many failures within less than the span',
    to: 'closed',
    setup: () => {},
    act: (b) => {
      for (let n = 0; n < 10; n++) b.settle(b.send(call()), false, new Error('ERR'));
      wall += 499;
      b.settle(b.send(call()), false, new Error('ERR'));
    },
  },
  {
    from: 'closed',
    event: 'failures over the span with a success between',
    to: 'closed',
    setup: () => {},
    act: (b) => {
      b.settle(b.send(call()), false, new Error('ERR'));
      b.settle(b.send(call()), false, new Error('ERR'));
      wall += 300;
      b.settle(b.send(call()), true);
      wall += 300;
      b.settle(b.send(call()), false, new Error('ERR'));
    },
  },
  { from: 'open', event: 'a call before the probe is due', to: 'open', setup: toOpen, act: (b) => b.poke() },
  {
    from: 'open',
    event: 'a call once the probe is due',
    to: 'half-open',
    setup: toOpen,
    act: (b) => {
      wall += PROBE_MS;
      b.poke();
    },
  },
  { from: 'open', event: 'a reconnect', to: 'half-open', setup: toOpen, act: (b) => b.probeNow() },
  { from: 'open', event: 'the connection closed again', to: 'open', setup: toOpen, act: (b) => b.trip('again') },
  {
    from: 'half-open',
    event: 'the probe answers',
    to: 'closed',
    setup: toHalfOpen,
    act: async () => {
      probeAnswer!.resolve(true);
      await settle();
    },
  },
  {
    from: 'half-open',
    event: 'the probe does not answer',
    to: 'open',
    setup: toHalfOpen,
    act: async () => {
      probeAnswer!.resolve(false);
      await settle();
    },
  },
  {
    from: 'half-open',
    event: 'the probe fails',
    to: 'open',
    setup: toHalfOpen,
    act: async () => {
      probeAnswer!.reject(new Error('ECONNREFUSED'));
      await settle();
    },
  },
  {
    from: 'half-open',
    event: 'the connection closed',
    to: 'half-open',
    setup: toHalfOpen,
    act: (b) => b.trip('connection closed'),
  },
  {
    from: 'half-open',
    event: 'another reconnect (one probe at a time)',
    to: 'half-open',
    setup: toHalfOpen,
    act: (b) => b.probeNow(),
  },
];

describe('transitions', () => {
  it.each(transitions)('$from, $event: $to', async (row) => {
    const b = make();
    await row.setup(b);
    expect(b.state).toBe(row.from);
    const before = { opened: opened.length, closed, probes };
    await row.act(b);
    expect(b.state).toBe(row.to);
    // onOpen once per entry into open from closed, onClose once per return to closed, one probe per half-open.
    expect(opened.length - before.opened).toBe(row.from === 'closed' && row.to === 'open' ? 1 : 0);
    expect(closed - before.closed).toBe(row.to === 'closed' && row.from !== 'closed' ? 1 : 0);
    expect(probes - before.probes).toBe(row.from === 'open' && row.to === 'half-open' ? 1 : 0);
    b.stop();
  });
});

describe('around the transitions', () => {
  it('opening diverts every call still waiting; their late replies are not counted but start a probe', async () => {
    const b = make();
    const first = b.send(call());
    b.send(call());
    b.trip('connection closed');
    expect(diverted).toBe(2);
    expect(opened).toEqual(['connection closed']);
    expect(b.settle(first, true)).toBe(false);
    expect(b.state).toBe('half-open');
    b.stop();
  });

  it('a late error of a diverted call starts no probe', () => {
    const b = make();
    const first = b.send(call());
    b.trip('connection closed');
    expect(b.settle(first, false, new Error('ECONNRESET'))).toBe(false);
    expect(b.state).toBe('open');
    b.stop();
  });

  it('names the silence in free loop time', () => {
    const b = make();
    b.send(call());
    freeTime(b, SILENCE_MS + TICK_MS);
    expect(opened).toEqual([`no reply for ${SILENCE_MS + TICK_MS} ms of free event-loop time`]);
    b.stop();
  });

  it('a failed probe spaces the next one by the probe interval', async () => {
    const b = make();
    await toHalfOpen(b);
    probeAnswer!.resolve(false);
    await settle();
    b.poke();
    expect(b.state).toBe('open');
    wall += PROBE_MS;
    b.poke();
    expect(b.state).toBe('half-open');
    b.stop();
  });

  it('a stopped breaker makes no transition', () => {
    const b = make();
    b.stop();
    b.trip('connection closed');
    expect(b.state).toBe('closed');
    expect(opened).toEqual([]);
  });
});

describe('the probe timer', () => {
  beforeEach(() => void vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] }));
  afterEach(() => void vi.useRealTimers());

  it('probes every probe interval while open, and stops once closed', async () => {
    const b = make();
    b.trip('connection closed');
    vi.advanceTimersByTime(PROBE_MS - 1);
    expect(probes).toBe(0);
    vi.advanceTimersByTime(1);
    expect(probes).toBe(1);
    probeAnswer!.resolve(false);
    await settle();
    vi.advanceTimersByTime(PROBE_MS);
    expect(probes).toBe(2);
    probeAnswer!.resolve(true);
    await settle();
    expect(b.state).toBe('closed');
    vi.advanceTimersByTime(5 * PROBE_MS);
    expect(probes).toBe(2);
    b.stop();
  });
});

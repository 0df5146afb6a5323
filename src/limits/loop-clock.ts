// Time during which the event loop was free to read a reply. A reply that reached the socket while the
// loop was blocked (a burst being parsed, a long synchronous task, a starved CPU) is read as soon as the
// loop comes back, so that time proves nothing about Redis: the breaker judges Redis by this clock,
// not by wall time (docs/decisions.md section 1: the fallback only when Redis cannot be reached).
//
// A watchdog timer measures the loop's lag. Between two ticks the loop was free at most one period,
// less the tick's lateness: a tick late by L ms credits max(0, period - L) ms of free time, and the
// rest of the interval counts as blocked (a stall of any length credits nothing). Free time is wall
// time minus the blocked total; it errs on the side of less free time, so a busy loop never makes a
// reply look overdue (a stall not measured yet also reads as free time to come, not past).

export interface LoopClock {
  /** Milliseconds of free event-loop time, on an arbitrary origin. */
  now(): number;
  /** Called after every measurement (the breaker checks for overdue replies there). */
  onTick(listener: () => void): void;
  stop(): void;
}

export interface LoopClockOptions {
  /** The watchdog's period. Default 10 ms (a hundred cheap wake-ups a second, unref'd). */
  tickMs?: number;
  /** Wall clock in ms; injected by tests. */
  wallNow?: () => number;
  /** false: no timer, the caller calls the returned `tick` (tests drive it by hand). */
  timer?: boolean;
}

export function createLoopClock(o: LoopClockOptions = {}): LoopClock & { tick(): void } {
  const tickMs = o.tickMs ?? 10;
  const wallNow = o.wallNow ?? (() => performance.now());
  let lastTick = wallNow();
  let blocked = 0;
  const listeners: (() => void)[] = [];

  function tick(): void {
    const wall = wallNow();
    const elapsed = wall - lastTick;
    const lateness = Math.max(0, elapsed - tickMs);
    blocked += elapsed - Math.max(0, tickMs - lateness);
    lastTick = wall;
    for (const listener of listeners) listener();
  }

  const timer = o.timer === false ? undefined : setInterval(tick, tickMs);
  // Measuring must never keep the process (or a test run) alive.
  timer?.unref();

  return {
    now: () => wallNow() - blocked,
    onTick: (listener) => void listeners.push(listener),
    tick,
    stop: () => clearInterval(timer),
  };
}

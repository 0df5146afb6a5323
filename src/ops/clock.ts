// The time every rule reads. Injected everywhere instead of `Date.now()`, so a test moves time by hand
// (test/helpers/stack.ts's FakeClock) and a window, a cooldown or an expiry is proven without sleeping.

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

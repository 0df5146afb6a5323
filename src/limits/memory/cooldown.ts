// Failed authentications and cooldowns per client address in this process's memory, both keyed by
// addressKey(ip): the IPv4 address, or the /64 of an IPv6 one.
import { addressKey } from '../../http/address.js';
import { COOLDOWN_MS, FAILURE_LIMIT, FAILURE_WINDOW_MS, type FailureCooldown } from '../types.js';
import type { Clock } from '../../ops/clock.js';

interface Failures {
  count: number;
  /** End of the 15-minute failure window, which starts at the first failure. */
  until: number;
}

export interface MemoryCooldown extends FailureCooldown {
  /** Seconds left in the address's cooldown at `now`, or 0. */
  left(ip: string, now: number): number;
  size(): number;
  /** Drops the failure windows and cooldowns that are over. */
  sweep(now: number): void;
}

/** `beforeRecord` runs before a failure is counted (the stores' sweep on write). */
export function createMemoryCooldown(clock: Clock, beforeRecord: () => void): MemoryCooldown {
  const failures = new Map<string, Failures>();
  /** Address -> end of its cooldown, in clock milliseconds. */
  const cooldowns = new Map<string, number>();

  function left(ip: string, now: number): number {
    const address = addressKey(ip);
    const end = cooldowns.get(address);
    if (end === undefined) return 0;
    if (end <= now) {
      cooldowns.delete(address);
      return 0;
    }
    return Math.ceil((end - now) / 1000);
  }

  return {
    left,
    async check(ip) {
      return left(ip, clock.now());
    },
    // Checked and counted in one synchronous step, as the Redis script does (docs/decisions.md section 3):
    // a failure that meets a running cooldown answers its seconds left and is not counted.
    async recordFailure(ip) {
      const now = clock.now();
      const running = left(ip, now);
      if (running > 0) return running;
      beforeRecord();
      const address = addressKey(ip);
      let f = failures.get(address);
      if (f === undefined || f.until <= now) {
        f = { count: 0, until: now + FAILURE_WINDOW_MS };
        failures.set(address, f);
      }
      f.count += 1;
      if (f.count >= FAILURE_LIMIT) {
        cooldowns.set(address, now + COOLDOWN_MS);
        // The cooldown replaces the count: after it ends, the address starts again from zero failures.
        failures.delete(address);
      }
      return 0;
    },
    size: () => failures.size + cooldowns.size,
    sweep(now) {
      for (const [ip, f] of failures) if (f.until <= now) failures.delete(ip);
      for (const [ip, end] of cooldowns) if (end <= now) cooldowns.delete(ip);
    },
  };
}

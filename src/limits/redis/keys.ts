// The stores' Redis keys.
//
// Key layout (prefix default `kg:`); the part in braces is the Cluster hash tag, so every script
// touches exactly one slot and the keys of one IP's cooldown live together:
//   <prefix>rl:{<counter id>}:<window start ms>   fixed-window counter, TTL = rest of window + slack
//   <prefix>af:{<address>}:failures                hash {n, until}: failed authentications, TTL 15 min
//   <prefix>af:{<address>}:cooldown                cooldown end (clock ms), TTL 15 min
//   <prefix>af:{cooldowns}:latest                  the latest end of any cooldown (clock ms), TTL 15 min
//                                                  from the last one set; standalone only (see FAILURE_LUA)
// where <address> is addressKey(ip): the IPv4 address, or the /64 of an IPv6 one (../address.ts).
//   <prefix>av:{<org id>}                          access version (no TTL: it must never reset to 0)
//   <prefix>rl:{m:<org id>}:<month start ms>       monthly quota's counter, TTL = rest of month + 1 day;
//                                                  checkpointed to PostgreSQL (../month-checkpoint.ts)
//   <prefix>fleet:{gateways}                       sorted set: gateway instance id -> its last beat
//                                                  (Redis's own clock, ms); see ../fleet.ts

import { addressKey } from '../../http/address.js';

export interface RedisKeys {
  counter(id: string, start: number): string;
  failures(ip: string): string;
  cooldown(ip: string): string;
  version(orgId: number): string;
  latestCooldown: string;
  fleet: string;
}

/** The keys under `prefix`, which may hold neither braces nor whitespace. */
export function redisKeys(prefix: string): RedisKeys {
  if (/[{}]/.test(prefix)) {
    // A brace in the prefix would become the hash tag of every key and put them all in one slot.
    throw new Error(`Redis key prefix must not contain '{' or '}': ${JSON.stringify(prefix)}`);
  }
  if (/\s/.test(prefix)) {
    // The standalone gate packs its keys into one newline-separated argument (./gate.ts).
    throw new Error(`Redis key prefix must not contain whitespace: ${JSON.stringify(prefix)}`);
  }
  return {
    counter: (id, start) => `${prefix}rl:{${id}}:${start}`,
    failures: (ip) => `${prefix}af:{${addressKey(ip)}}:failures`,
    cooldown: (ip) => `${prefix}af:{${addressKey(ip)}}:cooldown`,
    version: (orgId) => `${prefix}av:{${orgId}}`,
    latestCooldown: `${prefix}af:{cooldowns}:latest`,
    fleet: `${prefix}fleet:{gateways}`,
  };
}

// The stores' Lua scripts other than the gate's (./gate.ts), and the commands ioredis defines for them.
import { MONTH_LUA } from './gate-lua.js';
import type { RedisConnection } from './client.js';

/** Extra TTL past the window's end, so an instance whose clock runs a little behind still finds its counter. */
export const TTL_SLACK_MS = 5_000;

// Spend one token from each key (RateLimiter.spend with cost 1); the key is created with its TTL in the same atomic step, so no
// counter can outlive its window (no read-then-write: the returned count is the one this hit made).
// ARGV[1]: TTL in ms.
const HIT_LUA = `
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('PEXPIRE', key, ARGV[1]) end
  out[i] = n
end
return out
`;

// KEYS[1]: failures hash, KEYS[2]: cooldown key (same hash tag, so same slot), KEYS[3] (standalone
// only): the latest end of any cooldown, which the gate script reads once per batch and skips every
// address's cooldown key while it lies in the past (GATE_LUA). It is raised, never lowered, in the same
// step as the cooldown and with the same TTL, so it outlives every cooldown key; a Cluster cannot hold
// it beside KEYS[1..2] (another slot), and its gate reads each address's cooldown anyway.
// ARGV: now, failure window end, failure limit, cooldown end, TTL of both (ms).
// The failure window's end is kept in the hash and compared with the caller's clock, so every
// instance (and a test's fake clock) agrees on it; the PX TTL only frees the memory afterwards.
// Checking the cooldown and counting are one step (docs/decisions.md section 3: the 6th request gets 150006,
// however many arrive at once): a failure that meets a running cooldown is not counted, and the reply
// is its seconds left (at least 1); a counted failure, the 5th included, replies 0.
const FAILURE_LUA = `
local now = tonumber(ARGV[1])
local cooldownEnd = tonumber(redis.call('GET', KEYS[2]))
if cooldownEnd ~= nil and cooldownEnd > now then
  return math.ceil((cooldownEnd - now) / 1000)
end
local untilMs = tonumber(redis.call('HGET', KEYS[1], 'until'))
if untilMs == nil or untilMs <= now then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'until', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
if n >= tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
  redis.call('DEL', KEYS[1])
  if KEYS[3] and tonumber(ARGV[4]) > tonumber(redis.call('GET', KEYS[3]) or '0') then
    redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
  end
end
return 0
`;

// KEYS[1]: the fleet's live set; ARGV[1]: this instance's id, ARGV[2]: how long a beat counts (ms).
// Redis's clock, not the instances': their clocks may disagree, the set's one server (per slot) cannot.
const FLEET_BEAT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
`;

// KEYS[1]: a counter; ARGV[1]: what the fallback counted in its window, ARGV[2]: the counter's TTL (ms).
// Created with its TTL in the same step when the fallback's count is its first, as HIT_LUA does.
const ADD_LUA = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n
`;

// ioredis adds methods named after the definitions; these names are unlikely to clash with
// commands another module defines on the same connection.
const HIT_CMD = 'keygateLimitHit';
const FAILURE_CMD = 'keygateRecordFailure';
const MONTH_CMD = 'keygateMonthSpend';
const FLEET_BEAT_CMD = 'keygateFleetBeat';
const ADD_CMD = 'keygateLimitAdd';

export interface ScriptCommands {
  keygateMonthSpend(key: string, quota: number, ttlMs: number, floor: number): Promise<number>;
  keygateLimitAdd(key: string, count: number, ttlMs: number): Promise<number>;
  keygateLimitHit(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<number[]>;
  /** KEYS: the failures hash, the cooldown key and (standalone) the latest cooldown's end; see FAILURE_LUA. */
  keygateRecordFailure(numKeys: 2 | 3, ...keysThenArgs: (string | number)[]): Promise<number>;
  keygateFleetBeat(fleetKey: string, id: string, ttlMs: number): Promise<number>;
}

/** Defines the scripts on the connection (EVALSHA, falling back to EVAL when a script is not loaded yet). */
export function defineScripts(redis: RedisConnection): ScriptCommands {
  redis.defineCommand(HIT_CMD, { lua: HIT_LUA });
  redis.defineCommand(FAILURE_CMD, { lua: FAILURE_LUA });
  redis.defineCommand(MONTH_CMD, { lua: MONTH_LUA, numberOfKeys: 1 });
  redis.defineCommand(ADD_CMD, { lua: ADD_LUA, numberOfKeys: 1 });
  redis.defineCommand(FLEET_BEAT_CMD, { lua: FLEET_BEAT_LUA, numberOfKeys: 1 });
  return redis as unknown as ScriptCommands;
}

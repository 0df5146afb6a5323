// The gate on a standalone Redis: cooldown, access version and spend-or-read for a batch of gateway
// requests in one script (CONTRACT.md section 3). A Cluster cannot run it (its keys span slots); see
// clusterGate in ./redis.ts.

import type { Redis } from 'ioredis';
import { WINDOW_MS, hitOf, layerState, windowStart, type Clock, type CounterRef, type GateRequest, type GateResult } from './types.js';

// Every gate call made while the event loop polls is sent together when it is done, or as soon as 16
// are waiting (one write, one reply, one script run for many requests under load). Each request is
// still decided on its own, in arrival order, so two requests for one counter see each other's spend
// exactly as if sent apart.
// The batch is decided at one instant (the clock when it is sent): ARGV[1] = now (ms), ARGV[2] = the
// counters' TTL (ms); then per request: the expected version, and 's' (spend) or 'p' (peek) followed
// by its number of counters ('s2'). KEYS per request: the IP's cooldown, the organization's access
// version, its counters. Nothing is spent unless the cooldown is clear and the version matches.
// Reply per request: {'c', cooldown end} | {'v', version} | {'s', count...} (counts are integers
// when spent, strings when peeked: no string is built for a spend).
// bench/diagnostics/gate-redis-cpu.mjs reads this script from this file.
const GATE_LUA = `
local now, ttl = tonumber(ARGV[1]), ARGV[2]
local out = {}
local k = 1
for r = 1, (#ARGV - 2) / 2 do
  local ver, op = tonumber(ARGV[2 * r + 1]), ARGV[2 * r + 2]
  local spend, nc = string.sub(op, 1, 1) == 's', tonumber(string.sub(op, 2))
  local res
  local cd = redis.call('GET', KEYS[k])
  if cd and tonumber(cd) > now then
    res = {'c', cd}
  else
    local v = redis.call('GET', KEYS[k + 1]) or '0'
    if tonumber(v) ~= ver then
      res = {'v', v}
    else
      res = {'s'}
      for i = k + 2, k + 1 + nc do
        if spend then
          local n = redis.call('INCR', KEYS[i])
          if n == 1 then redis.call('PEXPIRE', KEYS[i], ttl) end
          res[#res + 1] = n
        else
          res[#res + 1] = redis.call('GET', KEYS[i]) or '0'
        end
      end
    end
  end
  k = k + 2 + nc
  out[r] = res
end
return out
`;

/**
 * Requests per gate script at most. A full batch is sent at once rather than at the end of the turn,
 * so Redis works on it while the gateway parses the rest of a burst: under a burst of 50 requests the
 * first ones do not wait for the last to be parsed. It also bounds the time one script holds Redis.
 */
const GATE_BATCH_MAX = 16;

// ioredis adds a method named after the definition; the name is unlikely to clash with commands
// another module defines on the same connection.
const GATE_CMD = 'keygateGate';

interface GateCommand {
  keygateGate(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<(string | number)[][]>;
}

interface QueuedGate {
  req: GateRequest;
  refs: CounterRef[];
  resolve(result: GateResult): void;
  reject(err: unknown): void;
}

/** The Redis keys the gate touches; their layout is described in ./redis.ts. */
export interface GateKeys {
  counter(id: string, windowStartMs: number): string;
  cooldown(ip: string): string;
  version(orgId: number): string;
}

export interface GateBatcherOptions {
  redis: Redis;
  clock: Clock;
  keys: GateKeys;
  /** Extra TTL of a counter past its window's end. */
  ttlSlackMs: number;
}

/** Whole seconds left until a cooldown's end (clock ms, as stored), or 0 when it is over or absent. */
export function cooldownSecondsLeft(end: string | null, now: number): number {
  if (end === null) return 0;
  const left = Math.ceil((Number(end) - now) / 1000);
  return left > 0 ? left : 0;
}

/** The standalone gate: each call joins the batch of its event-loop turn (see GATE_LUA). */
export function createGateBatcher(opts: GateBatcherOptions): (req: GateRequest) => Promise<GateResult> {
  const { redis, clock, keys, ttlSlackMs } = opts;
  // defineCommand sends EVALSHA and falls back to EVAL when the script is not loaded yet.
  redis.defineCommand(GATE_CMD, { lua: GATE_LUA });
  const script = redis as unknown as GateCommand;

  let queued: QueuedGate[] = [];
  function flushGates() {
    if (queued.length === 0) return;
    const batch = queued;
    queued = [];
    void sendGates(batch);
  }

  async function sendGates(batch: QueuedGate[]) {
    const now = clock.now();
    const start = windowStart(now);
    let replies: (string | number)[][];
    try {
      const scriptKeys: string[] = [];
      const args: (string | number)[] = [now, start + WINDOW_MS - now + ttlSlackMs];
      for (const gate of batch) {
        scriptKeys.push(keys.cooldown(gate.req.ip), keys.version(gate.req.orgId));
        for (const ref of gate.refs) scriptKeys.push(keys.counter(ref.id, start));
        args.push(gate.req.version, (gate.req.spend ? 's' : 'p') + gate.refs.length);
      }
      replies = await script.keygateGate(scriptKeys.length, ...scriptKeys, ...args);
    } catch (err) {
      for (const gate of batch) gate.reject(err);
      return;
    }
    // A reply that cannot be read fails its own call, never leaves it waiting.
    for (let n = 0; n < batch.length; n++) {
      try {
        batch[n].resolve(gateResult(batch[n], replies[n], now, start));
      } catch (err) {
        batch[n].reject(err);
      }
    }
  }

  function gateResult(gate: QueuedGate, reply: (string | number)[], now: number, start: number): GateResult {
    if (reply[0] === 'c') return { kind: 'cooldown', seconds: cooldownSecondsLeft(String(reply[1]), now) || 1 };
    if (reply[0] === 'v') return { kind: 'stale' };
    const states = gate.refs.map((ref, n) => layerState(ref.limit, Number(reply[n + 1]), start));
    if (!gate.req.spend) return { kind: 'peeked', states };
    return { kind: 'spent', hit: hitOf(states[0], states[1]) };
  }

  // Not async: the caller gets the batch's promise itself, with no wrapper to settle.
  return (req) => {
    const refs = req.spend ?? req.peek ?? [];
    return new Promise<GateResult>((resolve, reject) => {
      queued.push({ req, refs, resolve, reject });
      if (queued.length === 1) setImmediate(flushGates);
      else if (queued.length >= GATE_BATCH_MAX) flushGates();
    });
  };
}

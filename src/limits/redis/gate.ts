// The gate on a standalone Redis: cooldown, access version and spend-or-read for a batch of gateway
// requests in one script (docs/decisions.md section 3). A Cluster cannot run it (its keys span slots); see
// clusterGate in ./index.ts.

import type { Redis } from 'ioredis';
import {
  WINDOW_MS,
  hitOf,
  layerState,
  monthEnd,
  monthStart,
  monthState,
  windowStart,
  type CounterRef,
  type GateRequest,
  type GateResult,
} from '../types.js';
import type { Clock } from '../../ops/clock.js';
import type { MonthFloors } from '../month-checkpoint.js';
import { GATE_LUA } from './gate-lua.js';

/**
 * Requests per gate script at most. A full batch is sent at once rather than at the end of the turn,
 * so Redis works on it while the gateway parses the rest of a burst: under a burst of 50 requests the
 * first ones do not wait for the last to be parsed. It also bounds the time one script holds Redis.
 */
const GATE_BATCH_MAX = 16;

/** A monthly counter outlives its month by a day, so a report read at the turn still finds it. */
export const MONTH_TTL_SLACK_MS = 86_400_000;

// ioredis adds a method named after the definition; the name is unlikely to clash with commands
// another module defines on the same connection.
const GATE_CMD = 'keygateGate';

interface GateCommand {
  keygateGate(now: number, ttl: number, requests: string, monthTtl: number, latestCooldown: string): Promise<string>;
}

interface QueuedGate {
  req: GateRequest;
  refs: CounterRef[];
  resolve(result: GateResult): void;
  reject(err: unknown): void;
}

/** The Redis keys the gate touches; their layout is described in ./index.ts. */
export interface GateKeys {
  counter(id: string, windowStartMs: number): string;
  cooldown(ip: string): string;
  version(orgId: number): string;
  /** The latest end of any cooldown (see FAILURE_LUA in ./scripts.ts). */
  latestCooldown: string;
}

export interface GateBatcherOptions {
  redis: Redis;
  clock: Clock;
  keys: GateKeys;
  /** Extra TTL of a counter past its window's end. */
  ttlSlackMs: number;
  /** The months' checkpoint (../month-checkpoint.ts); without it a lost month's counter starts again at 0. */
  month?: MonthFloors;
}

/** Whole seconds left until a cooldown's end (clock ms, as stored), or 0 when it is over or absent. */
export function cooldownSecondsLeft(end: string | null, now: number): number {
  if (end === null) return 0;
  const left = Math.ceil((Number(end) - now) / 1000);
  return left > 0 ? left : 0;
}

/** The standalone gate: each call joins the batch of its event-loop turn (see GATE_LUA). */
export function createGateBatcher(opts: GateBatcherOptions): (req: GateRequest) => Promise<GateResult> {
  const { redis, clock, keys, ttlSlackMs, month: floors } = opts;
  // defineCommand sends EVALSHA and falls back to EVAL when the script is not loaded yet.
  redis.defineCommand(GATE_CMD, { lua: GATE_LUA, numberOfKeys: 0 });
  const script = redis as unknown as GateCommand;

  let queued: QueuedGate[] = [];
  function flushGates() {
    if (queued.length === 0) return;
    const batch = queued;
    queued = [];
    void sendGates(batch);
  }

  async function sendGates(batch: QueuedGate[]) {
    let now = clock.now();
    let month = monthStart(now);
    // A month's counter spent for the first time this month on this instance: its checkpoint first.
    if (floors !== undefined) {
      let first: string[] | undefined;
      for (const gate of batch) {
        const ref = gate.req.spend?.[2];
        if (ref?.month && floors.floor(ref.id, month) === undefined) (first ??= []).push(ref.id);
      }
      if (first !== undefined) {
        await floors.load(first, month);
        now = clock.now();
        month = monthStart(now);
      }
    }
    const start = windowStart(now);
    let lines: string[];
    try {
      let fields = '';
      for (const gate of batch) {
        const quota = gate.req.spend !== undefined && gate.refs[gate.refs.length - 1].month === true;
        const op = gate.req.spend ? gate.refs.length + (quota ? 100 : 0) : -gate.refs.length;
        fields += `${gate.req.version}\n${op}\n${keys.cooldown(gate.req.ip)}\n${keys.version(gate.req.orgId)}\n`;
        for (const ref of gate.refs) fields += `${keys.counter(ref.id, ref.month ? month : start)}\n`;
        if (quota) {
          for (const ref of gate.refs) fields += `${ref.limit}\n`;
          fields += `${floors?.floor(gate.refs[gate.refs.length - 1].id, month) ?? 0}\n`;
        }
      }
      lines = (
        await script.keygateGate(
          now,
          start + WINDOW_MS - now + ttlSlackMs,
          fields,
          monthEnd(now) - now + MONTH_TTL_SLACK_MS,
          keys.latestCooldown,
        )
      ).split('\n');
    } catch (err) {
      for (const gate of batch) gate.reject(err);
      return;
    }
    // A reply that cannot be read fails its own call, never leaves it waiting.
    for (let n = 0; n < batch.length; n++) {
      try {
        batch[n].resolve(gateResult(batch[n], lines[n], now, start, month));
      } catch (err) {
        batch[n].reject(err);
      }
    }
  }

  function gateResult(
    gate: QueuedGate,
    line: string | undefined,
    now: number,
    start: number,
    month: number,
  ): GateResult {
    if (line === undefined) throw new Error('gate script: no reply line for this request');
    const kind = line[0];
    if (kind === 'c') return { kind: 'cooldown', seconds: cooldownSecondsLeft(line.slice(2), now) || 1 };
    if (kind === 'v') return { kind: 'stale' };
    if (kind !== 's') throw new Error(`gate script: unexpected reply ${JSON.stringify(line.slice(0, 40))}`);
    const counts = line.split(' ');
    if (counts.length !== gate.refs.length + 1) throw new Error('gate script: wrong number of counts');
    const states = gate.refs.map((ref, n) =>
      ref.month
        ? monthState(ref.limit, monthCount(ref, Number(counts[n + 1]), month, gate.req.spend !== undefined), now)
        : layerState(ref.limit, Number(counts[n + 1]), start),
    );
    if (!gate.req.spend) return { kind: 'peeked', states };
    return { kind: 'spent', hit: hitOf(states[0], states[1], states[2]) };
  }

  /** A month's count as answered: noted for the checkpoint when spent; a read shows at least its floor. */
  function monthCount(ref: CounterRef, n: number, month: number, spent: boolean): number {
    if (floors === undefined) return n;
    if (!spent) return Math.max(n, floors.floor(ref.id, month) ?? 0);
    // Past the quota the spend was undone: the counter holds one less.
    floors.seen(ref.id, month, n > ref.limit ? n - 1 : n);
    return n;
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

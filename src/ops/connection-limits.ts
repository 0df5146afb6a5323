// Connection bounds per listener and per client address. Every open socket holds a descriptor; one
// address holding thousands of slow heads took every descriptor of the process, so new connections
// (the admin API's, the upstream's, Redis's) failed for everyone (issue 36, defect 6). A listener takes
// at most its share of the descriptor limit, one peer address at most its share of that, and the rest
// stays for the upstream, Redis and PostgreSQL. The peer is the socket's: X-Forwarded-For is not read yet.
import { readFileSync } from 'node:fs';
import type net from 'node:net';

/** The soft limit on open descriptors (RLIMIT_NOFILE), or `fallback` where /proc does not say. */
export function descriptorLimit(fallback = 1024): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m) return m[1] === 'unlimited' ? 1_048_576 : Number(m[1]);
  } catch {
    // Not Linux: the common default.
  }
  return fallback;
}

export interface ConnectionBounds {
  /** Open connections this listener keeps at once. */
  max: number;
  /** Open connections one peer address keeps at once. */
  perAddress: number;
}

/**
 * The defaults for a process whose descriptors number `limit`: a quarter of them held back for the
 * upstream pool, Redis, PostgreSQL, logs and files; the gateway takes 3/5 of the rest, the admin API 1/5
 * (the operations port has ADMIN_MAX_CONNECTIONS); one address at most a quarter of a listener's share.
 */
export function defaultBounds(limit: number): { gateway: ConnectionBounds; adminApi: ConnectionBounds } {
  const usable = Math.max(64, Math.floor(limit * 0.75));
  const gateway = Math.max(16, Math.floor((usable * 3) / 5));
  const adminApi = Math.max(8, Math.floor(usable / 5));
  return {
    gateway: { max: gateway, perAddress: Math.max(4, Math.floor(gateway / 4)) },
    adminApi: { max: adminApi, perAddress: Math.max(4, Math.floor(adminApi / 4)) },
  };
}

/**
 * Open WebSocket tunnels a gateway holds at once (WEBSOCKET_MAX_TUNNELS unset). A tunnel holds two
 * descriptors for its life: its client connection, which stays one of the listener's (counted against
 * `max` and `perAddress` by boundConnections until it closes), and its connection to the target, which
 * comes out of the quarter held back. A quarter of the gateway's share leaves most of that reserve to
 * the upstream pool, Redis and PostgreSQL (1024 descriptors: 115 tunnels, whose targets take 115 of the 411 left to the rest).
 */
export function defaultTunnelBound(limit: number): number {
  return Math.max(4, Math.floor(defaultBounds(limit).gateway.max / 4));
}

export interface Refusals {
  /** A connection refused: the listener's name and why. Logged once per episode by the caller's rule. */
  (listener: string, reason: 'listener' | 'address'): void;
}

/**
 * Bound `server`'s connections: beyond `max` node:net closes them at accept; beyond `perAddress` from
 * one peer they are closed here, before node:http reads a byte. A Map lookup per connection, nothing
 * per request. Connections handed over by a WORKERS primary arrive through 'connection' too.
 */
export function boundConnections(server: net.Server, name: string, b: ConnectionBounds, refused: Refusals): void {
  server.maxConnections = b.max;
  server.on('drop', () => refused(name, 'listener'));
  const open = new Map<string, number>();
  // Connections a WORKERS primary hands over never pass maxConnections: counted here as well.
  let total = 0;
  // Prepended: node:http's own listener must not start parsing a connection refused here.
  server.prependListener('connection', (socket: net.Socket) => {
    if (total >= b.max) {
      refused(name, 'listener');
      return void socket.destroy();
    }
    const addr = socket.remoteAddress ?? '';
    const n = open.get(addr) ?? 0;
    if (n >= b.perAddress) {
      refused(name, 'address');
      return void socket.destroy();
    }
    total++;
    open.set(addr, n + 1);
    socket.once('close', () => {
      total--;
      const left = (open.get(addr) ?? 1) - 1;
      if (left <= 0) open.delete(addr);
      else open.set(addr, left);
    });
  });
}

/**
 * A refusal counter and a warning once per episode: the first refusal logs, later ones count
 * until a minute passes without any, so a flood writes a line a minute at most, not one per connection.
 */
export function refusalLog(
  log: { warn(o: object, msg: string): void },
  count: (listener: string, reason: string) => void,
  quietMs = 60_000,
): Refusals {
  const last = new Map<string, number>();
  return (listener, reason) => {
    count(listener, reason);
    const k = `${listener}:${reason}`;
    const now = Date.now();
    const prev = last.get(k);
    last.set(k, now);
    if (prev === undefined || now - prev > quietMs)
      log.warn({ listener, reason }, 'connections refused: a connection bound was reached');
  };
}

// The connection pools of one service: one pool per target origin (and TLS name), made on its first request,
// with the service's connections (UPSTREAM_MAX_SOCKETS) shared over its targets. A target gone (its
// address left the DNS answer, a reload) closes its pool gracefully: the requests on it finish, the
// idle connections close, and no new request goes to it. The pool is ./lean-pool.ts (UPSTREAM_CLIENT=lean,
// the default; undici's on a runtime without node's parser) or undici's Pool (UPSTREAM_CLIENT=undici);
// everything above the pool is the same for both.
import type { Dispatcher } from 'undici';
// The Pool's own file, not undici's index: some 10 MB less RSS (src/gateway/undici-pool.d.ts).
import Pool from 'undici/lib/dispatcher/pool.js';
import { LeanPool, leanClientAvailable } from './lean-pool.js';
import { tlsNameOf } from './dns.js';

/** What a pool is made for: where to connect (`http://10.0.0.5:9000`), and the configured URL's authority. */
export interface PoolTarget {
  readonly origin: string;
  /**
   * The configured URL's `host:port`: an https target named by host and connected at an address asks
   * TLS for that name (SNI, and the certificate checked against it), not for the address.
   */
  readonly authority?: string;
}

/** A pool's connect settings for a target: its origin, and the name TLS is asked for (null: the origin's own host). */
interface PoolPlace {
  key: string;
  origin: string;
  servername: string | null;
}

/** Where a target's pool connects; two targets share a pool only when both match. */
function placeOf(target: PoolTarget): PoolPlace {
  const { origin, authority } = target;
  const name = authority !== undefined && origin.startsWith('https:') ? tlsNameOf(authority) : undefined;
  // A target not yet resolved connects at its name: TLS asks for it without being told.
  const servername = name === undefined || name === new URL(origin).hostname ? null : name;
  return { key: servername === null ? origin : `${origin} ${servername}`, origin, servername };
}

export interface PoolOptions {
  /** Connections over all of the service's pools. */
  maxSockets: number;
  /** undici's bound on a connection's TCP (and TLS) set-up. */
  connectTimeoutMs: number;
  /** UPSTREAM_CLIENT: ./lean-pool.ts (the default) or undici's Pool. */
  client?: 'undici' | 'lean';
}

/** What the forwarder and this module use of a pool, undici's or the lean one. */
export interface UpstreamPool {
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandlers): boolean;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

/** Connections of each pool: the service's share per target, at least one. */
export function connectionsPerPool(maxSockets: number, targets: number): number {
  return Math.max(1, Math.floor(maxSockets / Math.max(1, targets)));
}

export class TargetPools {
  private readonly open = new Map<string, UpstreamPool>();
  /** Pools of targets gone, finishing their requests; destroyed if the service closes first. */
  private readonly closing = new Set<UpstreamPool>();
  private connections: number;
  private closed = false;
  // Nearly every request goes to the target of the one before it (a service of one target): that pool is kept.
  private lastTarget: PoolTarget | null = null;
  private lastPool: UpstreamPool | null = null;
  private readonly places = new WeakMap<PoolTarget, PoolPlace>();

  constructor(
    private readonly options: PoolOptions,
    targets = 1,
  ) {
    this.connections = connectionsPerPool(options.maxSockets, targets);
  }

  /** The pool of a target's place (./placeOf), made now if it has none. */
  get(target: PoolTarget): UpstreamPool {
    if (target === this.lastTarget) return this.lastPool!;
    const place = this.placeOf(target);
    let pool = this.open.get(place.key);
    if (pool === undefined) {
      if (this.closed) throw new Error('the service is closed');
      pool =
        this.options.client !== 'undici' && leanClientAvailable
          ? this.lean(place)
          : new Pool(place.origin, {
              connections: this.connections,
              pipelining: 1,
              keepAliveTimeout: 30_000,
              keepAliveMaxTimeout: 600_000,
              // The forwarder's deadlines (src/gateway/deadlines.ts) bound the head and the silences of the
              // body; undici's own (pooled timers, swept every half second) would only repeat them.
              headersTimeout: 0,
              bodyTimeout: 0,
              connectTimeout: this.options.connectTimeoutMs,
              ...(place.servername === null ? {} : { connect: { servername: place.servername } }),
            });
      this.open.set(place.key, pool);
    }
    this.lastTarget = target;
    this.lastPool = pool;
    return pool;
  }

  /**
   * The service's targets now: the pools of origins no longer among them close gracefully. When the
   * share of connections per target changed, every pool is replaced by one of the new size (the old
   * ones finish what they carry), so the pools together keep within the service's connections.
   */
  follow(targets: readonly PoolTarget[]): void {
    if (this.closed) return;
    const places = new Set<string>();
    for (const t of targets) places.add(this.placeOf(t).key);
    const connections = connectionsPerPool(this.options.maxSockets, places.size);
    const resized = connections !== this.connections;
    this.connections = connections;
    for (const [key, pool] of this.open) {
      if (resized || !places.has(key)) this.retire(key, pool);
    }
  }

  /** Where each pool open to new requests connects: its origin, followed by its TLS name when it has one. */
  origins(): string[] {
    return [...this.open.keys()];
  }

  /** Pools closing gracefully now. */
  closingCount(): number {
    return this.closing.size;
  }

  /** Every pool destroyed: requests still on them fail, their connections close. */
  async close(): Promise<void> {
    this.closed = true;
    this.lastTarget = this.lastPool = null;
    const all = [...this.open.values(), ...this.closing];
    this.open.clear();
    this.closing.clear();
    await Promise.all(all.map((p) => p.destroy()));
  }

  private lean(place: PoolPlace): UpstreamPool {
    return new LeanPool(place.origin, {
      connections: this.connections,
      connectTimeout: this.options.connectTimeoutMs,
      keepAliveTimeout: 30_000,
      servername: place.servername,
    });
  }

  /** A target's place, worked out once per target object (a service of several targets looks one up per request). */
  private placeOf(target: PoolTarget): PoolPlace {
    let place = this.places.get(target);
    if (place === undefined) this.places.set(target, (place = placeOf(target)));
    return place;
  }

  private retire(key: string, pool: UpstreamPool): void {
    this.open.delete(key);
    if (pool === this.lastPool) this.lastTarget = this.lastPool = null;
    this.closing.add(pool);
    // close() waits for the requests queued and in flight on it; destroy() at the service's close cuts them.
    pool
      .close()
      .catch(() => {})
      .finally(() => this.closing.delete(pool));
  }
}

// What startApp (src/app.ts) takes and gives, and what its pieces (this folder) hand each other.
import type { GatewayDeps } from '../gateway/context.js';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import type { Plans } from '../config/plans.js';
import type { Routes } from '../config/routes.js';
import type { Profile } from '../config/profile/types.js';
import type { Db } from '../db/index.js';
import type { PrincipalCache } from '../access/cache.js';
import type { AccessResolver } from '../access/resolver.js';
import type { SharedStores } from '../limits/types.js';
import type { Clock } from '../ops/clock.js';
import type { BackendServices } from '../backend/services.js';
import type { Tracing } from '../ops/tracing.js';
import type { RedisConnection } from '../limits/redis/index.js';
import type { GatewayMetrics } from '../ops/metrics.js';

export type AppMode = 'start' | 'gateway' | 'backend';

export type AppSettings = Settings & { GATEWAY_SECRET: string; INTERNAL_TOKEN: string };

export interface AppOptions {
  mode: AppMode;
  settings: AppSettings;
  log: Logger;
  clock?: Clock;
  /** Injected by tests; otherwise built from REDIS_URL / REDIS_CLUSTER_NODES or in memory. */
  stores?: SharedStores;
  db?: Db;
  redisPrefix?: string;
  /** A parsed-or-raw seed to apply at start. */
  seed?: unknown;
  /** Listen on port 0 (tests). */
  ephemeralPorts?: boolean;
  /** Background jobs (token refresh, pending limits); tests drive them by hand. */
  jobs?: boolean;
  /** Forward somewhere other than the in-process backend in all-in-one (tests: a recording upstream). */
  upstreamOverride?: string;
  /** OpenTelemetry tracing; by default from the OTEL_* environment (null: not configured). */
  tracing?: Tracing<AccessResolver> | null;
  /**
   * A worker of WORKERS > 1: the primary accepts on PORT and hands each connection over
   * (`acceptConnection`); the gateway's own listener and the admin server's are private, each on a
   * loopback port of its own, read by the primary only.
   */
  handedConnections?: boolean;
}

export interface App {
  gatewayUrl: string | null;
  backendUrl: string | null;
  adminUrl: string | null;
  /** The admin HTTP API and console (ADMIN_API_PORT), when enabled. */
  adminApiUrl: string | null;
  /** The decision service (DECISION_PORT, src/decision/), when enabled. */
  decisionUrl: string | null;
  /** Its gRPC external authorization (DECISION_GRPC_PORT) as host:port, when enabled. */
  decisionGrpcAddress: string | null;
  /** What the gateway's pipeline reads (src/decision/ and tests run it on described requests); null in `backend`. */
  gatewayDeps: GatewayDeps | null;
  db: Db;
  stores: SharedStores;
  cache: PrincipalCache | null;
  backend: BackendServices | null;
  setReady(v: boolean): void;
  /** SIGHUP: reload config/plans.json and config/routes.json; a bad file is refused and the old stays. */
  reload(): boolean;
  close(drainMs?: number): Promise<void>;
  /** With `handedConnections`: serve a connection the primary accepted. */
  acceptConnection(socket: Socket): void;
}

/** The plans and routes in force: replaced whole by a reload, read through these at each use. */
export interface LiveTables {
  plans(): Plans;
  routes(): Routes;
  /** The profile in force (docs/profiles.md): its interfaces; its routes and plans are the two above. */
  profile(): Profile;
  /** Told after each reload that took effect; returns the unsubscribe. */
  onReload?(listener: () => void): () => void;
}

/** What startApp builds before the backend and the gateway, handed to both. */
export interface AppParts {
  app: AppOptions;
  db: Db;
  clock: Clock;
  stores: SharedStores;
  /** The stores' Redis connection, when they are this process's own and Redis is configured. */
  redis: RedisConnection | null;
  metrics: GatewayMetrics;
  pepper: string;
  tables: LiveTables;
  /** The drains' deadline at close time (App.close may set it). */
  drainMs(): number;
}

/** One step of App.close, run in the order startApp lists them. */
export type Closer = () => Promise<void>;

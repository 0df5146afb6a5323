// A whole keygate (gateway + backend) on ephemeral ports for one test file: its own database
// (schema on the CI PostgreSQL, else PGlite), its own Redis prefix (when REDIS_URL is set, else the
// memory stores), an injectable clock. Requests go through the real gateway.
import { randomBytes } from 'node:crypto';
import { startApp, type App, type AppMode } from '../../src/app.js';
import { settingsSchema } from '../../src/config/settings.js';
import { createLogger } from '../../src/ops/logger.js';
import type { Logger } from 'pino';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import { createRedisStores } from '../../src/limits/redis/index.js';
import { haveRedis, testRedisClient } from './redis.js';
import type { SharedStores } from '../../src/limits/types.js';
import type { Clock } from '../../src/ops/clock.js';
import { openTestDb } from './db.js';
import { seedWith } from '../fixtures/seed.js';
import type { Db } from '../../src/db/index.js';

export class FakeClock implements Clock {
  constructor(public t = Date.UTC(2026, 10, 22, 12, 0, 0)) {}
  now() {
    return this.t;
  }
  advance(ms: number) {
    this.t += ms;
  }
  /** Move to `s` seconds into the current minute. */
  setSecond(s: number) {
    this.t = this.t - (this.t % 60_000) + s * 1000;
  }
}

export interface Res {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface ReqOpts {
  /** Bearer key for /v2. */
  key?: string;
  /** X-Api-Key for /v1. */
  apiKey?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Client IP: sent as X-Forwarded-For from the trusted loopback peer. */
  ip?: string;
}

export interface Stack {
  app: App;
  db: Db;
  stores: SharedStores;
  gatewaySecret: string;
  internalToken: string;
  gatewayUrl: string;
  backendUrl: string;
  adminUrl: string;
  /** Through the gateway. */
  request(method: string, path: string, o?: ReqOpts): Promise<Res>;
  /** Straight to the backend's /internal routes with the internal token. */
  internal(method: string, path: string, body?: unknown): Promise<Res>;
  /** Straight to the backend's /api-keys routes with a session cookie. */
  session(method: string, path: string, token: string | null, body?: unknown): Promise<Res>;
  close(): Promise<void>;
}

export interface StackOptions {
  seed?: unknown;
  /** Extra seed sections merged into the base seed (ignored when `seed` is given). */
  extra?: Record<string, unknown[]>;
  clock?: Clock;
  /** Share stores and database between stacks (two gateway instances). */
  stores?: SharedStores;
  db?: Db;
  mode?: AppMode;
  upstreamUrl?: string;
  /** All-in-one, but the gateway forwards here instead of to its own backend. */
  upstreamOverride?: string;
  env?: Record<string, string>;
  /** Force the memory stores even when REDIS_URL is set. */
  memory?: boolean;
  /** Let the app build its own stores from REDIS_URL in `env` (resilient wrapper included). */
  appStores?: boolean;
  /** A logger of the test's own (to read what the program logs). */
  log?: Logger;
  /** The Redis key prefix of app-built stores (share it between instances). */
  redisPrefix?: string;
}

export async function fetchRes(url: string, init: RequestInit): Promise<Res> {
  const r = await fetch(url, init);
  const text = await r.text();
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: r.status, headers: r.headers, body, text };
}

/** Stores for a test: Redis (Cluster in the `cluster` project) with a fresh prefix when available, else memory. */
export function testStores(clock?: Clock, memory = false): SharedStores {
  if (haveRedis() && !memory) {
    return createRedisStores({ redis: testRedisClient(), prefix: `t${randomBytes(5).toString('hex')}:`, clock });
  }
  return createMemoryStores({ clock });
}

export async function startStack(o: StackOptions = {}): Promise<Stack> {
  const ownDb = !o.db;
  const db = o.db ?? (await openTestDb());
  const stores = o.appStores ? undefined : (o.stores ?? testStores(o.clock, o.memory));
  const settings = settingsSchema.parse({
    TRUST_PROXY: '127.0.0.1,::1',
    LOG_LEVEL: 'silent',
    GATEWAY_SECRET: 'test-gateway-secret-0123456789',
    INTERNAL_TOKEN: 'test-internal-token-0123456789',
    HOST: '127.0.0.1',
    ...(o.upstreamUrl ? { UPSTREAM_URL: o.upstreamUrl } : {}),
    ...o.env,
  });
  const app = await startApp({
    mode: o.mode ?? 'start',
    settings: settings as typeof settings & { GATEWAY_SECRET: string; INTERNAL_TOKEN: string },
    log: o.log ?? createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    clock: o.clock,
    stores,
    redisPrefix: o.appStores ? (o.redisPrefix ?? `t${randomBytes(5).toString('hex')}:`) : undefined,
    db,
    seed: o.seed ?? (o.db ? undefined : seedWith(o.extra)),
    ephemeralPorts: true,
    jobs: false,
    upstreamOverride: o.upstreamOverride,
  });
  const json = (body: unknown) =>
    body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return {
    app,
    db,
    stores: app.stores,
    gatewaySecret: settings.GATEWAY_SECRET!,
    internalToken: settings.INTERNAL_TOKEN!,
    gatewayUrl: app.gatewayUrl ?? '',
    backendUrl: app.backendUrl ?? '',
    adminUrl: app.adminUrl ?? '',
    request(method, path, r = {}) {
      const headers: Record<string, string> = { ...r.headers };
      if (r.key) headers.authorization = `Bearer ${r.key}`;
      if (r.apiKey) headers['x-api-key'] = r.apiKey;
      if (r.ip) headers['x-forwarded-for'] = r.ip;
      if (r.body !== undefined) headers['content-type'] ??= 'application/json';
      return fetchRes(app.gatewayUrl + path, { method, headers, body: json(r.body) });
    },
    internal(method, path, body) {
      const headers: Record<string, string> = { authorization: `Bearer ${settings.INTERNAL_TOKEN}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      return fetchRes(app.backendUrl + path, { method, headers, body: json(body) });
    },
    session(method, path, token, body) {
      const headers: Record<string, string> = {};
      if (token) headers.cookie = `session=${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      return fetchRes(app.backendUrl + path, { method, headers, body: json(body) });
    },
    async close() {
      await app.close(0);
      if (ownDb) await (db as Db & { drop(): Promise<void> }).drop();
      if (!o.stores && stores) await stores.close();
    },
  };
}

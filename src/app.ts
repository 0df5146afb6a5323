// Composition: build the services once and hand them down (CONTRIBUTING.md, backend domains). Used by the CLI and tests.
import type http from 'node:http';
import { watch, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Settings } from './config/settings.js';
import { loadPlans, type Plans } from './config/plans.js';
import { bandsFrom } from './config/bands.js';
import { loadRoutes, type Routes } from './config/routes.js';
import { openDb, migrate, type Db } from './db/index.js';
import { applySeed, parseSeed } from './access/seed.js';
import { getPepper } from './access/pepper.js';
import { PrincipalCache } from './access/cache.js';
import { createMemoryStores } from './limits/memory.js';
import { createRedisClient, createRedisStores, redisClientSettings, redisSettingName } from './limits/redis.js';
import { createResilientStores } from './limits/resilient.js';
import { systemClock, type Clock, type LimitStores } from './limits/types.js';
import { isMisconfigured, listenError, settingError } from './config/errors.js';
import { accessChangedVia, type BackendServices } from './backend/services.js';
import { createGatewayServer } from './gateway/server.js';
import { createForwarder } from './gateway/forward.js';
import { BodyBudget, bodySharesOf } from './gateway/body.js';
import { createAccessResolver, type ResolverEvents } from './access/resolver.js';
import { LastUseRecorder } from './access/last-use.js';
import { drainable } from './ops/drain.js';
import { createCors } from './gateway/cors.js';
import { openApiRoute } from './gateway/openapi.js';
import { TrustedProxies } from './gateway/client-ip.js';
import { createMetrics } from './ops/metrics.js';
import { backgroundChecks, createAdminServer } from './ops/admin.js';
import { jwtSignerFromSettings } from './http/identity-jwt.js';
import { keepTickShape } from './ops/tick-shape.js';
import { OrgTraffic } from './admin-api/traffic.js';
import { createTracingFromEnv, type Tracing } from './ops/tracing.js';

export type AppMode = 'start' | 'gateway' | 'backend';

export interface AppOptions {
  mode: AppMode;
  settings: Settings & { GATEWAY_SECRET: string; INTERNAL_TOKEN: string };
  log: Logger;
  clock?: Clock;
  /** Injected by tests; otherwise built from REDIS_URL / REDIS_CLUSTER_NODES or in memory. */
  stores?: LimitStores;
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
  tracing?: Tracing | null;
  /**
   * A worker of WORKERS > 1: the primary accepts on PORT and hands each connection over
   * (`acceptConnection`); the gateway's own listener is private, on a loopback port of its own.
   */
  handedConnections?: boolean;
}

export interface App {
  gatewayUrl: string | null;
  backendUrl: string | null;
  adminUrl: string | null;
  /** The admin HTTP API and console (ADMIN_API_PORT), when enabled. */
  adminApiUrl: string | null;
  db: Db;
  stores: LimitStores;
  cache: PrincipalCache | null;
  backend: BackendServices | null;
  setReady(v: boolean): void;
  /** SIGHUP: reload config/plans.json and config/routes.json; a bad file is refused and the old stays. */
  reload(): boolean;
  close(drainMs?: number): Promise<void>;
  /** With `handedConnections`: serve a connection the primary accepted. */
  acceptConnection(socket: Socket): void;
}

export async function startApp(o: AppOptions): Promise<App> {
  const s = o.settings;
  const clock = o.clock ?? systemClock;
  // A V8 workaround for servers that run long: src/ops/tick-shape.ts.
  await keepTickShape();
  // An unreachable database stops the start with one line naming DATABASE_URL (or DATA_DIR).
  const [dbSetting, dbWhere] = s.DATABASE_URL
    ? ['DATABASE_URL', { url: s.DATABASE_URL }]
    : ['DATA_DIR', { path: s.DATA_DIR }];
  const db =
    o.db ??
    (await openDb({ databaseUrl: s.DATABASE_URL, dataDir: s.DATA_DIR, queryTimeoutMs: s.DB_QUERY_TIMEOUT_MS }).catch(
      (err): never => {
        throw settingError(dbSetting, err, dbWhere);
      },
    ));
  await migrate(db).catch(async (err) => {
    if (!o.db) await db.close().catch(() => {});
    throw settingError(dbSetting, err, dbWhere);
  });
  let plans: Plans = loadPlans(s.PLANS_FILE);
  let routes: Routes = loadRoutes(s.ROUTES_FILE);
  const metrics = createMetrics({ defaults: !o.ephemeralPorts });
  let cache: PrincipalCache | null = null;
  const redis = o.stores ? null : redisClientSettings(s) ? createRedisClient(redisClientSettings(s)!) : null;
  // Reconnect attempts emit an error each; the breaker logs the outage once per transition instead.
  redis?.on('error', (err: Error) => o.log.debug({ err: err.message }, 'redis connection error'));
  const shared = redis ? createRedisStores({ redis, prefix: o.redisPrefix ?? s.REDIS_KEY_PREFIX, clock }) : null;
  const stores: LimitStores =
    o.stores ??
    (shared
      ? createResilientStores({
          primary: shared,
          // The live set of gateway instances: open mode falls back to this instance's share.
          fleet: shared.fleet,
          fallback: createMemoryStores({ clock }),
          mode: s.RATE_LIMIT_FAILURE_MODE,
          // Redis is judged by its connection and by replies overdue in free event-loop time, not
          // by a timer on a loop that may be busy (src/limits/resilient.ts).
          connection: redis ?? undefined,
          replyTimeoutMs: s.REDIS_COMMAND_TIMEOUT_MS,
          log: o.log.child({ c: 'limits' }),
          events: {
            onDegraded: (on) => metrics.degraded(on),
            // Versions bumped while Redis was away never reached us: trust no cached principal.
            onRecovered: () => cache?.clear(),
            observe: (op, sec, ok) => metrics.redisLatency(op, sec, ok),
            degradedCall: (mode) => metrics.degradedCall(mode),
          },
        })
      : createMemoryStores({ clock }));
  // A Redis that is down is an outage (start degraded); a host that does not resolve or refused credentials a bad setting.
  const redisSetting = redisSettingName(s);
  const redisState = redis ? await waitForRedis(redis, 5_000) : true;
  if (redisState instanceof Error) {
    redis?.disconnect();
    if (!o.db) await db.close().catch(() => {});
    throw settingError(redisSetting, redisState, { url: redisSetting === 'REDIS_URL' ? s.REDIS_URL : undefined });
  }
  if (!redisState) o.log.warn({ setting: redisSetting }, 'redis does not answer yet; starting degraded');

  if (o.seed !== undefined) {
    const orgs = await applySeed(db, parseSeed(o.seed));
    // Cached principals of these organizations (other instances) must not outlive the seed.
    for (const org of orgs)
      await stores.versions.bump(org).catch(() => o.log.warn({ org }, 'access version bump after seeding failed'));
  }
  const pepper = await getPepper(db);
  const port = (p: number) => (o.ephemeralPorts ? 0 : p);
  // A port in use names its setting; an address this machine does not have names HOST.
  const listen = (
    srv: http.Server,
    p: number,
    host: string,
    setting: 'PORT' | 'ADMIN_PORT' | 'BACKEND_PORT' | 'ADMIN_API_PORT',
  ) =>
    new Promise<string>((resolve, reject) => {
      srv.once('error', (err) => reject(listenError(setting, host, p, err)));
      srv.listen(p, host, () =>
        resolve(`http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${(srv.address() as AddressInfo).port}`),
      );
    });

  const closers: (() => Promise<void>)[] = [];
  let drain = s.DRAIN_TIMEOUT_MS;
  let backendUrl: string | null = null;
  let backend: BackendServices | null = null;
  if (o.mode !== 'gateway') {
    const backendLog = o.log.child({ c: 'backend' });
    // Stored mailbox credentials are brought under the current key before the backend answers anything.
    const { openCredentials } = await import('./backend/credentials/accounts.js');
    const credentials = await openCredentials({
      db,
      log: backendLog,
      clock,
      keys: s.CREDENTIAL_KEYS,
      dataDir: s.DATA_DIR,
    });
    backend = {
      db,
      plans: () => plans,
      bands: () => bandsFrom(s.WARMUP_BANDS_FILE),
      scopes: () => routes.scopes,
      clock,
      log: backendLog,
      pepper,
      credentials,
      accessChanged: accessChangedVia(stores.versions, o.log),
      config: {
        gatewaySecret: s.GATEWAY_SECRET,
        internalToken: s.INTERNAL_TOKEN,
        bodyLimitBytes: s.BODY_LIMIT_BYTES,
        googleProfileUrl: s.GOOGLE_PROFILE_URL,
        microsoftProfileUrl: s.MICROSOFT_PROFILE_URL,
        googleAdminUrl: s.GOOGLE_ADMIN_URL,
        microsoftGraphUrl: s.MICROSOFT_GRAPH_URL,
        dnsResolver: s.DNS_RESOLVER,
        oauthClientIds: { google: s.GOOGLE_OAUTH_CLIENT_ID, microsoft: s.MICROSOFT_OAUTH_CLIENT_ID },
        oauthRedirectUri: s.OAUTH_REDIRECT_URI,
        auditRetentionDays: s.AUDIT_RETENTION_DAYS,
      },
    };
    // Loaded only where the backend runs: the gateway alone never imports the resource handlers.
    const { createBackendServer } = await import('./backend/server.js');
    const { startJobs } = await import('./backend/jobs.js');
    const srv = createBackendServer(backend);
    const backendDrain = drainable(srv);
    // In all-in-one the backend is private to the process (CONTRACT section 1).
    backendUrl = await listen(srv, port(s.BACKEND_PORT), o.mode === 'start' ? '127.0.0.1' : s.HOST, 'BACKEND_PORT');
    // Drained like the gateway's listener: in the sidecar the backend is the upstream of in-flight requests.
    closers.push(() => backendDrain.drain(drain));
    if (o.jobs !== false) {
      const stop = startJobs(backend);
      closers.push(async () => stop());
    }
  }

  let gatewayUrl: string | null = null;
  let adminUrl: string | null = null;
  let adminApiUrl: string | null = null;
  let ready = false;
  let gatewaySrv: http.Server | null = null;
  if (o.mode !== 'backend') {
    cache = new PrincipalCache({ db, pepper, preflight: stores.preflight, versions: stores.versions });
    const c = cache;
    // Changes made outside the backend (or by another instance without Redis) evict on NOTIFY.
    const unlisten = await db.listen(`keygate_access_${db.schema}`, (payload) => {
      if (payload === '*') return c.clear(); // the notification channel reconnected: events may be lost
      const org = Number(payload);
      if (Number.isInteger(org)) {
        const before = c.size;
        c.evictOrganization(org);
        metrics.invalidation(before - c.size);
      }
    });
    closers.push(unlisten);
    // Each key's last use, written once a minute and on close (after the drain, before the database).
    const lastUse = new LastUseRecorder(db, clock, (err) =>
      o.log.warn({ err: err.message }, 'last-use write failed; kept for the next'),
    );
    lastUse.start();
    const upstream = o.upstreamOverride ?? (o.mode === 'start' && backendUrl ? backendUrl : s.UPSTREAM_URL);
    const forwarder = createForwarder({
      upstream,
      timeoutMs: s.UPSTREAM_TIMEOUT_MS,
      maxSockets: s.UPSTREAM_MAX_SOCKETS,
      ownCors: s.CORS_ORIGINS.length > 0,
      observe: (sec) => metrics.upstreamLatency(sec),
    });
    // The identity sent upstream (IDENTITY_FORMAT): the HMAC headers, a JWT whose keys the admin port publishes, or both.
    const jwt = jwtSignerFromSettings(s, o.mode);
    // Without an audience a token for one service is good at every other behind this gateway.
    if (jwt && !s.IDENTITY_JWT_AUDIENCE)
      o.log.warn(
        { setting: 'IDENTITY_JWT_AUDIENCE' },
        'the identity JWT carries no aud claim: verifiers must be built with anyAudience: true; set IDENTITY_JWT_AUDIENCE when the gateway fronts more than one service',
      );
    // Per-organization accepted/refused counts per minute for the admin console's chart: in memory, and
    // flushed to Redis in batches (when there is one) so any admin API instance reads the whole fleet.
    const traffic = new OrgTraffic({
      clock,
      redis,
      prefix: o.redisPrefix ?? s.REDIS_KEY_PREFIX,
      log: o.log.child({ c: 'traffic' }),
    });
    closers.push(() => traffic.close());
    const identity = {
      identityHmac: s.IDENTITY_FORMAT !== 'jwt',
      identityJwt: s.IDENTITY_FORMAT === 'hmac' ? null : jwt,
    };
    // Off (no OTEL_* endpoint), the SDK is never loaded and the gateway's objects are its own.
    const tracing = o.tracing !== undefined ? o.tracing : await createTracingFromEnv(process.env);
    if (tracing) closers.push(() => tracing.close());
    const resolverEvents: ResolverEvents = {
      cache: (hit) => metrics.cache(hit),
      authFailure: (kind) => metrics.authFailure(kind),
      used: (p, now) => lastUse.record(p, now),
    };
    const access = createAccessResolver(cache, stores, resolverEvents, clock);
    const principals = cache;
    // A sampled request gets a resolver of its own, whose store calls open spans under its span.
    tracing?.resolvers((st, ev) => createAccessResolver(principals, st, ev, clock), stores, resolverEvents);
    const gateway = createGatewayServer({
      ...identity,
      routes: () => routes,
      plans: () => plans,
      access,
      stores,
      forwarder,
      tracing,
      limitMode: s.RATE_LIMIT_MODE,
      trusted: new TrustedProxies(s.TRUST_PROXY),
      clock,
      log: o.log.child({ c: 'gateway' }),
      metrics,
      gatewaySecret: s.GATEWAY_SECRET,
      bodyLimitBytes: s.BODY_LIMIT_BYTES,
      targetMaxBytes: s.REQUEST_TARGET_MAX_BYTES,
      bodyTimeoutMs: s.BODY_TIMEOUT_MS,
      bodyBudget: new BodyBudget(bodySharesOf(s)),
      linger: { timeMs: s.LINGER_TIME_MS, maxBytes: s.LINGER_MAX_BYTES },
      accessLog: (s as { ACCESS_LOG?: string }).ACCESS_LOG !== 'off',
      cors: createCors(s.CORS_ORIGINS),
      openApi: (path) => openApiRoute(path, s.OPENAPI_DIR),
      traffic: (org, refused) => traffic.record(org, refused),
    });
    gatewaySrv = gateway.server;
    // The dependencies are checked once a second in the background; probes and scrapes read the result.
    // Off the probe's path, a check may wait a whole second before it calls a dependency down.
    const health = backgroundChecks(async () => {
      const database = (await withinMs(db.ping(), 1_000, false)) ? 'up' : 'down';
      const degraded = (stores as { degraded?: () => boolean }).degraded?.() === true;
      const redisState = !redis
        ? 'absent'
        : degraded
          ? 'degraded'
          : (await withinMs(stores.ready(), 1_000, false))
            ? 'up'
            : 'down';
      metrics.dependency('database', database === 'up');
      if (redis) metrics.dependency('redis', redisState === 'up');
      return { database, redis: redisState };
    });
    closers.push(async () => health.stop());
    await health.first;
    const admin = createAdminServer({
      metrics,
      jwt,
      ready: () => ready && !gateway.draining,
      // The breaker's verdict costs nothing to read: it is live, not a second old.
      checks: () => {
        const last = health.current();
        return redis && (stores as { degraded?: () => boolean }).degraded?.() === true
          ? { ...last, redis: 'degraded' }
          : last;
      },
      maxConnections: s.ADMIN_MAX_CONNECTIONS,
    });
    gatewayUrl = o.handedConnections
      ? await new Promise<string>((resolve, reject) => {
          // exclusive: a handle of this worker's own, not one node:cluster shares through the primary.
          gatewaySrv!.once('error', reject);
          gatewaySrv!.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () =>
            resolve(`http://127.0.0.1:${(gatewaySrv!.address() as AddressInfo).port}`),
          );
        })
      : await listen(gatewaySrv, port(s.PORT), s.HOST, 'PORT');
    adminUrl = await listen(admin, port(s.ADMIN_PORT), s.ADMIN_HOST ?? s.HOST, 'ADMIN_PORT');
    if (s.ADMIN_API_PORT !== undefined) {
      const { startAdminApi } = await import('./admin-api/index.js');
      const adminApi = startAdminApi({
        db,
        pepper,
        clock,
        log: o.log.child({ c: 'admin-api' }),
        stores,
        traffic,
        trusted: new TrustedProxies(s.TRUST_PROXY),
        plans: () => plans,
        scopes: () => routes.scopes,
      });
      adminApiUrl = await listen(adminApi, port(s.ADMIN_API_PORT), s.HOST, 'ADMIN_API_PORT');
      const adminApiDrain = drainable(adminApi);
      closers.unshift(() => adminApiDrain.drain(0));
    }
    // The admin listener stops last: /readyz says 503 for the whole drain.
    const adminDrain = drainable(admin);
    closers.unshift(() => adminDrain.drain(0));
    closers.unshift(async () => forwarder.close());
    closers.unshift(() => lastUse.stop());
    closers.unshift(() => gateway.drain(drain));
  }
  ready = true;
  const app: App = {
    gatewayUrl,
    backendUrl,
    adminUrl,
    adminApiUrl,
    db,
    stores,
    cache,
    backend,
    setReady(v) {
      ready = v;
    },
    reload() {
      try {
        const nextPlans = loadPlans(s.PLANS_FILE);
        const nextRoutes = loadRoutes(s.ROUTES_FILE);
        plans = nextPlans;
        routes = nextRoutes;
        o.log.info({ plans: s.PLANS_FILE, routes: s.ROUTES_FILE }, 'configuration reloaded');
        return true;
      } catch (err) {
        o.log.error({ err: (err as Error).message }, 'configuration reload refused; the previous files stay in force');
        return false;
      }
    },
    acceptConnection(socket) {
      if (!gatewaySrv) return void socket.destroy();
      // As net.Server does for what it accepts: node:http reports a client's errors through socket.server.
      (socket as Socket & { server: http.Server }).server = gatewaySrv;
      gatewaySrv.emit('connection', socket);
    },
    async close(drainMs) {
      ready = false;
      if (drainMs !== undefined) drain = drainMs;
      for (const c of closers) await c();
      if (!o.stores) await stores.close();
      if (!o.db) await db.close();
    },
  };
  // A ConfigMap update or an edit of either file reloads both, as SIGHUP does (no restart, no rebuild).
  const unwatch = watchConfigFiles([s.PLANS_FILE, s.ROUTES_FILE], () => app.reload(), o.log);
  closers.push(async () => unwatch());
  return app;
}

/**
 * Call `reload` when PLANS_FILE or ROUTES_FILE changes on disk. The directories are watched, not the
 * files: Kubernetes updates a mounted ConfigMap by swapping the `..data` symlink beside the file, which
 * a watch on the file itself never sees. An update is a burst of events, so they are debounced, and a
 * reload runs only when the files' text differs from what was last seen. A bad file is refused by
 * `reload` (the old tables stay, as with SIGHUP); fixing it triggers the next reload.
 */
export function watchConfigFiles(files: string[], reload: () => unknown, log: Logger, debounceMs = 200): () => void {
  const text = () =>
    files
      .map((f) => {
        try {
          return readFileSync(f, 'utf8');
        } catch {
          return '';
        }
      })
      .join('\0');
  let seen = text();
  let timer: NodeJS.Timeout | undefined;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const now = text();
      if (now === seen) return;
      seen = now;
      reload();
    }, debounceMs).unref();
  };
  const watchers = [...new Set(files.map((f) => dirname(resolve(f))))].flatMap((dir) => {
    try {
      const w = watch(dir, changed).unref();
      w.on('error', (err) => log.warn({ dir, err: err.message }, 'config watch stopped; SIGHUP still reloads'));
      return [w];
    } catch (err) {
      log.warn({ dir, err: (err as Error).message }, 'config directory not watched; SIGHUP still reloads');
      return [];
    }
  });
  return () => {
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}

/** `p`, or `fallback` when it takes longer than `ms` or fails (a health check must answer now). */
function withinMs<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
    timer.unref();
  });
  return Promise.race([p.catch(() => fallback), late]).finally(() => clearTimeout(timer));
}

/** Wait until the Redis client is connected: true; false after `ms`; at once the error of a bad setting (isMisconfigured). */
function waitForRedis(
  redis: {
    status: string;
    on(ev: string, fn: (err: Error) => void): unknown;
    off(ev: string, fn: (err: Error) => void): unknown;
  },
  ms: number,
): Promise<boolean | Error> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (v: boolean | Error) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      resolve(v);
    };
    const onReady = () => done(true);
    const onError = (err: Error) => {
      if (isMisconfigured(err)) done(err);
    };
    const timer = setTimeout(() => done(false), ms);
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
}

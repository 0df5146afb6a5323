// The gateway of startApp (modes `start` and `gateway`): the principal cache and what keeps it true,
// the forwarder, the identity sent upstream, tracing, and the gateway's server.
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import { PrincipalCache } from '../access/cache.js';
import { createAccessResolver, type AccessResolver, type ResolverEvents } from '../access/resolver.js';
import { LastUseRecorder } from '../access/last-use.js';
import { createGatewayServer, type GatewayDeps, type GatewayServer } from '../gateway/server.js';
import { Upstreams } from '../gateway/upstreams/registry.js';
import { resolverFor } from '../gateway/upstreams/dns.js';
import { leanClientAvailable } from '../gateway/upstreams/lean-pool.js';
import { BodyBudget, bodySharesOf } from '../gateway/body-budget.js';
import { createCors } from '../gateway/cors.js';
import { openApiRoute } from '../gateway/openapi.js';
import type { Profile } from '../config/profile/types.js';
import { TrustedProxies } from '../http/client-ip.js';
import { jwtSignerFromSettings } from '../http/identity-jwt.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { OrgTraffic } from '../admin-api/traffic.js';
import { createTracingFromEnv } from '../ops/tracing.js';
import type { AppOptions, AppParts, AppSettings, Closer } from './types.js';
import { startUsage } from './usage.js';
import { startEvents } from './events.js';

export interface StartedGateway {
  gateway: GatewayServer;
  /** What the gateway's pipeline reads; the decision service (src/decision/) runs the same pipeline on it. */
  deps: GatewayDeps;
  cache: PrincipalCache;
  traffic: OrgTraffic;
  upstreams: Upstreams;
  jwt: ReturnType<typeof jwtSignerFromSettings>;
  /** Run first at close, in this order: the drain, the last uses, the upstream's sockets. */
  first: Closer[];
  /** Run after the backend's: the NOTIFY listener, the traffic counts, the tracer. */
  last: Closer[];
}

export async function startGateway(
  o: AppParts & {
    /** The in-process backend's URL in all-in-one. */
    backendUrl: string | null;
  },
): Promise<StartedGateway> {
  const { app, db, clock, stores, metrics } = o;
  const s = app.settings;
  const cache = new PrincipalCache({ db, pepper: o.pepper, preflight: stores.preflight, versions: stores.versions });
  const unlisten = await evictOnNotify(db, cache, metrics);
  // Each key's last use, written once a minute and on close (after the drain, before the database).
  const lastUse = new LastUseRecorder(db, clock, (err) =>
    app.log.warn({ err: err.message }, 'last-use write failed; kept for the next'),
  );
  lastUse.start();
  const upstream = app.upstreamOverride ?? (app.mode === 'start' && o.backendUrl ? o.backendUrl : s.UPSTREAM_URL);
  // The services of the routes in force, each with its targets, health and pools; a reload syncs them.
  if (s.UPSTREAM_CLIENT === 'lean' && !leanClientAvailable)
    app.log.warn("this node has no _http_common parser: the upstreams' pools are undici's (UPSTREAM_CLIENT=undici)");
  const upstreams = new Upstreams({
    upstream,
    timeoutMs: s.UPSTREAM_TIMEOUT_MS,
    maxSockets: s.UPSTREAM_MAX_SOCKETS,
    ownCors: s.CORS_ORIGINS.length > 0,
    // A request matched before a reload may still read its body, then wait for its answer's head.
    retireAfterMs: s.BODY_TIMEOUT_MS + 2 * s.UPSTREAM_TIMEOUT_MS,
    clock,
    log: app.log.child({ c: 'upstreams' }),
    metrics: metrics.upstreams,
    observe: (sec) => metrics.upstreamLatency(sec),
    resolve: s.UPSTREAM_DNS_SERVER ? resolverFor(s.UPSTREAM_DNS_SERVER) : undefined,
    client: s.UPSTREAM_CLIENT,
  });
  upstreams.sync(o.tables.routes().services);
  const unsubscribe = o.tables.onReload?.(() => upstreams.sync(o.tables.routes().services));
  const jwt = identitySigner(s, app.mode, app.log);
  // Per-organization accepted/refused counts per minute for the admin console's chart: in memory, and
  // flushed to Redis in batches (when there is one) so any admin API instance reads the whole fleet.
  const traffic = new OrgTraffic({
    clock,
    redis: o.redis,
    prefix: app.redisPrefix ?? s.REDIS_KEY_PREFIX,
    log: app.log.child({ c: 'traffic' }),
  });
  // Off (no OTEL_* endpoint), the SDK is never loaded and the gateway's objects are its own.
  const tracing = app.tracing !== undefined ? app.tracing : await createTracingFromEnv<AccessResolver>(process.env);
  const resolverEvents: ResolverEvents = {
    cache: (hit) => metrics.cache(hit),
    authFailure: (kind) => metrics.authFailure(kind),
    used: (p, now) => lastUse.record(p, now),
  };
  const access = createAccessResolver(cache, stores, resolverEvents, clock);
  const usage = await startUsage(o);
  const events = await startEvents(o);
  // A sampled request gets a resolver of its own, whose store calls open spans under its span.
  tracing?.resolvers((st, ev) => createAccessResolver(cache, st, ev, clock), stores, resolverEvents);
  const deps: GatewayDeps = {
    identityHmac: s.IDENTITY_FORMAT !== 'jwt',
    identityJwt: s.IDENTITY_FORMAT === 'hmac' ? null : jwt,
    profile: o.tables.profile,
    routes: o.tables.routes,
    plans: o.tables.plans,
    access,
    stores,
    upstreams,
    tracing,
    limitMode: s.RATE_LIMIT_MODE,
    trusted: new TrustedProxies(s.TRUST_PROXY),
    clock,
    log: app.log.child({ c: 'gateway' }),
    metrics,
    gatewaySecret: s.GATEWAY_SECRET,
    bodyLimitBytes: s.BODY_LIMIT_BYTES,
    targetMaxBytes: s.REQUEST_TARGET_MAX_BYTES,
    bodyTimeoutMs: s.BODY_TIMEOUT_MS,
    bodyBudget: new BodyBudget(bodySharesOf(s)),
    linger: { timeMs: s.LINGER_TIME_MS, maxBytes: s.LINGER_MAX_BYTES },
    accessLog: (s as { ACCESS_LOG?: string }).ACCESS_LOG !== 'off',
    cors: createCors(s.CORS_ORIGINS),
    openApi: await openApiOf(o.tables, s.OPENAPI_DIR),
    traffic: (org, refused) => traffic.record(org, refused),
    usage: usage.record,
    monthSpent: events.monthSpent,
    websocket: {
      recheckMs: s.WEBSOCKET_RECHECK_MS,
      maxTunnels: s.WEBSOCKET_MAX_TUNNELS,
    },
  };
  const gateway = createGatewayServer(deps);
  const last: Closer[] = [unlisten, () => traffic.close(), events.close, async () => unsubscribe?.()];
  if (tracing) last.push(() => tracing.close());
  return {
    gateway,
    deps,
    cache,
    traffic,
    upstreams,
    jwt,
    first: [() => gateway.drain(o.drainMs()), () => lastUse.stop(), usage.close, async () => upstreams.close()],
    last,
  };
}

/** Changes made outside the backend (or by another instance without Redis) evict on NOTIFY. */
function evictOnNotify(db: Db, cache: PrincipalCache, metrics: GatewayMetrics): Promise<Closer> {
  return db.listen(`keygate_access_${db.schema}`, (payload) => {
    if (payload === '*') return cache.clear(); // the notification channel reconnected: events may be lost
    const org = Number(payload);
    if (Number.isInteger(org)) {
      const before = cache.size;
      cache.evictOrganization(org);
      metrics.invalidation(before - cache.size);
    }
  });
}

/** The identity sent upstream (IDENTITY_FORMAT): HMAC headers, a JWT (keys on the admin port), or both. */
function identitySigner(s: AppSettings, mode: AppOptions['mode'], log: Logger) {
  const jwt = jwtSignerFromSettings(s, mode);
  // Without an audience a token for one service is good at every other behind this gateway.
  if (jwt && !s.IDENTITY_JWT_AUDIENCE)
    log.warn(
      { setting: 'IDENTITY_JWT_AUDIENCE' },
      'the identity JWT carries no aud claim: verifiers must be built with anyAudience: true; set IDENTITY_JWT_AUDIENCE when the gateway fronts more than one service',
    );
  return jwt;
}

/**
 * The API descriptions served without a key: the workspace API's checked-in documents (OPENAPI_DIR), or
 * another profile's generated from it (src/openapi/profile.ts), once per profile a reload brings. The
 * generator is loaded only under such a profile: the workspace API's gateway process never loads the
 * OpenAPI tools (test/ops/gateway-modules.test.ts).
 */
async function openApiOf(tables: AppParts['tables'], dir: string): Promise<(path: string) => Buffer | null> {
  let generate: ((p: Profile) => Map<string, Buffer>) | null = null;
  const load = async () => {
    if (!generate && tables.profile().kind !== 'workspace')
      generate = (await import('../openapi/profile.js')).openApiDocuments;
  };
  await load();
  // A reload that brings another kind of profile: its generator is ready for the requests after it.
  tables.onReload?.(() => void load());
  const generated = new WeakMap<Profile, Map<string, Buffer>>();
  return (path) => {
    const p = tables.profile();
    if (p.kind === 'workspace') return openApiRoute(path, dir);
    if (!generate || !path.endsWith('/openapi.json')) return null;
    let docs = generated.get(p);
    if (!docs) generated.set(p, (docs = generate(p)));
    return docs.get(path) ?? null;
  };
}

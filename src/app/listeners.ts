// The listeners of the gateway side of startApp: the gateway's own port, the admin port (probes,
// metrics, the identity JWT's keys) with the dependency checks it reports, and the admin API.
import { TrustedProxies } from '../http/client-ip.js';
import { backgroundChecks, createAdminServer, type DependencyChecks } from '../ops/ops-server.js';
import { boundConnections, defaultBounds, descriptorLimit, refusalLog } from '../ops/connection-limits.js';
import { drainable } from '../ops/drain.js';
import { listenOn, listenPrivately } from './listen.js';
import type { StartedGateway } from './gateway.js';
import type { AppParts, Closer } from './types.js';

export interface GatewayListeners {
  gatewayUrl: string;
  adminUrl: string;
  adminApiUrl: string | null;
  /** Run after the gateway's drain: the admin listener and the admin API (/readyz says 503 for the whole drain). */
  first: Closer[];
  /** Run last: the dependency checks. */
  last: Closer[];
}

export async function openGatewayListeners(
  o: AppParts & { gw: StartedGateway; port(p: number): number; ready(): boolean },
): Promise<GatewayListeners> {
  const { app, gw, db, stores, redis, metrics } = o;
  const s = app.settings;
  const degraded = () => (stores as { degraded?: () => boolean }).degraded?.() === true;
  // The dependencies are checked once a second in the background; probes and scrapes read the result.
  // Off the probe's path, a check may wait a whole second before it calls a dependency down.
  const health = backgroundChecks(async () => {
    const database = (await withinMs(db.ping(), 1_000, false)) ? 'up' : 'down';
    const redisState = !redis
      ? 'absent'
      : degraded()
        ? 'degraded'
        : (await withinMs(stores.ready(), 1_000, false))
          ? 'up'
          : 'down';
    metrics.dependency('database', database === 'up');
    if (redis) metrics.dependency('redis', redisState === 'up');
    return { database, redis: redisState };
  });
  const last: Closer[] = [async () => health.stop()];
  await health.first;
  const admin = createAdminServer({
    metrics,
    jwt: gw.jwt,
    ready: () => o.ready() && !gw.gateway.draining,
    // The breaker's verdict costs nothing to read: it is live, not a second old.
    checks: () => {
      const current = health.current();
      // Each service, when the routes file defines any: `up`, or `no_healthy_target` while every target
      // is ejected or failing its probe (the gateway still tries one of them: readiness stays with the
      // process, as for the database). With the one implicit upstream the body is as it always was.
      const services: DependencyChecks = gw.upstreams.configured()
        ? {
            services: Object.fromEntries(
              gw.upstreams
                .health()
                .map((h) => [h.service, h.healthy > 0 ? ('up' as const) : ('no_healthy_target' as const)]),
            ),
          }
        : {};
      return { ...current, ...(redis && degraded() ? { redis: 'degraded' as const } : {}), ...services };
    },
    maxConnections: s.ADMIN_MAX_CONNECTIONS,
  });
  // Each listener within its share of the descriptors, each peer address within its share of the
  // listener's (src/ops/connection-limits.ts): one client's slow heads leave the rest their answers.
  const bounds = defaultBounds(descriptorLimit());
  const refused = refusalLog(app.log, (l, r) => metrics.connectionRefused(l, r));
  boundConnections(
    gw.gateway.server,
    'gateway',
    {
      max: s.GATEWAY_MAX_CONNECTIONS ?? bounds.gateway.max,
      perAddress: s.GATEWAY_MAX_CONNECTIONS_PER_ADDRESS ?? bounds.gateway.perAddress,
    },
    refused,
  );
  const gatewayUrl = app.handedConnections
    ? await listenPrivately(gw.gateway.server)
    : await listenOn(gw.gateway.server, o.port(s.PORT), s.HOST, 'PORT');
  // A worker's admin server is read by its primary only, on a port the worker's own listen chose: a port
  // the primary found free and passed on could be taken by any process before the worker got there.
  const adminUrl = app.handedConnections
    ? await listenPrivately(admin)
    : await listenOn(admin, o.port(s.ADMIN_PORT), s.ADMIN_HOST, 'ADMIN_PORT');
  const adminDrain = drainable(admin);
  const first: Closer[] = [() => adminDrain.drain(0)];
  let adminApiUrl: string | null = null;
  if (s.ADMIN_API_PORT !== undefined) {
    const { startAdminApi } = await import('../admin-api/index.js');
    const adminApi = startAdminApi({
      db,
      pepper: o.pepper,
      clock: o.clock,
      log: app.log.child({ c: 'admin-api' }),
      stores,
      traffic: gw.traffic,
      trusted: new TrustedProxies(s.TRUST_PROXY),
      plans: o.tables.plans,
      scopes: () => o.tables.routes().scopes,
      profile: o.tables.profile,
    });
    boundConnections(
      adminApi,
      'admin_api',
      {
        max: s.ADMIN_API_MAX_CONNECTIONS ?? bounds.adminApi.max,
        perAddress: s.ADMIN_API_MAX_CONNECTIONS_PER_ADDRESS ?? bounds.adminApi.perAddress,
      },
      refused,
    );
    // A head takes at most 10 s (node's default is 60 s); a console's requests are small.
    adminApi.headersTimeout = Math.min(adminApi.headersTimeout, 10_000);
    adminApiUrl = await listenOn(adminApi, o.port(s.ADMIN_API_PORT), s.ADMIN_API_HOST, 'ADMIN_API_PORT');
    const adminApiDrain = drainable(adminApi);
    first.push(() => adminApiDrain.drain(0));
  }
  return { gatewayUrl, adminUrl, adminApiUrl, first, last };
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

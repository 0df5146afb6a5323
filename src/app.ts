// Composition: build the services once and hand them down (CONTRIBUTING.md, backend domains). Used by the
// CLI and tests. Each piece it starts is a module of src/app/: the database, the stores, the backend, the
// gateway and its listeners; this function orders them and puts together what closing undoes.
import type http from 'node:http';
import type { Socket } from 'node:net';
import { getPepper } from './access/pepper.js';
import type { PrincipalCache } from './access/cache.js';
import { systemClock } from './ops/clock.js';
import { keepTickShape } from './ops/tick-shape.js';
import { createMetrics } from './ops/metrics.js';
import { openAppDb } from './app/database.js';
import { openStores } from './app/stores.js';
import { startBackend } from './app/backend.js';
import { startGateway } from './app/gateway.js';
import { openGatewayListeners } from './app/listeners.js';
import { openDecisionListeners, type DecisionListeners } from './decision/listeners.js';
import { watchConfigFiles } from './app/config-watch.js';
import { applyStartSeed } from './app/seed.js';
import { loadTables } from './app/tables.js';
import { ConfigError } from './config/errors.js';
import type { App, AppOptions, AppParts, Closer } from './app/types.js';
import type { GatewayDeps } from './gateway/context.js';

export type { App, AppMode, AppOptions } from './app/types.js';

export async function startApp(o: AppOptions): Promise<App> {
  const s = o.settings;
  const clock = o.clock ?? systemClock;
  // A V8 workaround for servers that run long: src/ops/tick-shape.ts.
  await keepTickShape();
  const tables = loadTables(s, o.log);
  // The reference backend implements the workspace API's routes and nothing else (docs/profiles.md): under
  // another profile `start` is the gateway alone, forwarding to the profile's services.
  const withBackend = o.mode !== 'gateway' && tables.profile().kind === 'workspace';
  if (o.mode === 'backend' && !withBackend)
    throw new ConfigError(
      `the backend serves the workspace API only; profile ${tables.profile().file} is a ${tables.profile().kind} profile: run \`keygate gateway\` or \`keygate start\``,
    );
  const db = await openAppDb(s, o.db, o.mode !== 'gateway');
  const metrics = createMetrics({ defaults: !o.ephemeralPorts });
  let cache: PrincipalCache | null = null;
  const { redis, stores } = await openStores({
    settings: s,
    log: o.log,
    clock,
    metrics,
    injected: o.stores,
    redisPrefix: o.redisPrefix,
    db,
    // Versions bumped while Redis was away never reached us: trust no cached principal.
    onRecovered: () => cache?.clear(),
  }).catch(async (err): Promise<never> => {
    if (!o.db) await db.close().catch(() => {});
    throw err;
  });
  if (o.seed !== undefined) await applyStartSeed(db, stores, o.seed, o.log, tables.profile());
  const pepper = await getPepper(db);
  const port = (p: number) => (o.ephemeralPorts ? 0 : p);
  let drain = s.DRAIN_TIMEOUT_MS;
  const drainMs = () => drain;
  let ready = false;

  const parts: AppParts = { app: o, db, clock, stores, redis, metrics, pepper, tables, drainMs };
  const backend = withBackend ? await startBackend({ ...parts, port: port(s.BACKEND_PORT) }) : null;
  let gatewaySrv: http.Server | null = null;
  let urls = { gatewayUrl: null as string | null, adminUrl: null as string | null, adminApiUrl: null as string | null };
  // Closed in this order: the gateway's drain first, the admin listener after it (/readyz says 503 for
  // the whole drain), then the backend, and what the others still used last.
  let closers: Closer[] = backend?.closers ?? [];
  let gatewayDeps: GatewayDeps | null = null;
  let decision: Pick<DecisionListeners, 'decisionUrl' | 'decisionGrpcAddress'> = {
    decisionUrl: null,
    decisionGrpcAddress: null,
  };
  if (o.mode !== 'backend') {
    const gw = await startGateway({ ...parts, backendUrl: backend?.url ?? null });
    cache = gw.cache;
    gatewaySrv = gw.gateway.server;
    const listeners = await openGatewayListeners({ ...parts, gw, port, ready: () => ready });
    urls = listeners;
    const decisions = await openDecisionListeners({ ...parts, deps: gw.deps, port });
    decision = decisions;
    gatewayDeps = gw.deps;
    closers = [...decisions.first, ...gw.first, ...listeners.first, ...closers, ...gw.last, ...listeners.last];
  }
  ready = true;
  const app: App = {
    gatewayUrl: urls.gatewayUrl,
    backendUrl: backend?.url ?? null,
    adminUrl: urls.adminUrl,
    adminApiUrl: urls.adminApiUrl,
    decisionUrl: decision.decisionUrl,
    decisionGrpcAddress: decision.decisionGrpcAddress,
    gatewayDeps,
    db,
    stores,
    cache,
    backend: backend?.services ?? null,
    setReady(v) {
      ready = v;
    },
    reload: () => tables.reload(),
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
  // A ConfigMap update or an edit of any of the files reloads them all, as SIGHUP does (no restart, no rebuild).
  const unwatch = watchConfigFiles([s.PROFILE_FILE, s.PLANS_FILE, s.ROUTES_FILE], () => app.reload(), o.log);
  closers.push(async () => unwatch());
  return app;
}

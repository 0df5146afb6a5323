// One process of the bench topology, forked by bench/procs.ts with `node --import tsx`:
//   backend  startApp({mode:'backend'}): migrates, loads the bench seed, serves the upstream
//   gateway  startApp({mode:'gateway'}): the full /v2 pipeline against the backend, Redis stores
//   bare     bench/bare-proxy.ts: the baseline pass-through
// The parent talks to it over IPC: 'stats' (Redis round trips made by this process, RSS), 'profile-start' /
// 'profile-stop' (a CPU profile of the measured window, the same .cpuprofile format as node --cpu-prof),
// and 'stop'.
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import net, { type AddressInfo } from 'node:net';
import { memory, type ChildConfig, type FromChild, type ToChild } from './protocol.js';

/**
 * Count the writes this process makes on its sockets to Redis's port. ioredis writes every single command
 * with one `write` and a whole pipeline (or a batch of gate scripts) with one, so one write is one round
 * trip. Counted at the socket, so the stores startApp builds (the production ones: the circuit breaker
 * over the Redis stores) are the ones measured. Only the Redis sockets are wrapped (ioredis opens them
 * with `net.createConnection`): every other write of the process, to clients and to the upstream, runs
 * unwrapped, as in the bare proxy's process.
 */
function countRedisWrites(port: number, counter: { n: number }) {
  type Connect = (...a: unknown[]) => net.Socket;
  const mod = net as unknown as { createConnection: Connect };
  const connect = mod.createConnection;
  mod.createConnection = function (this: unknown, ...a: unknown[]) {
    const socket = connect.apply(this, a);
    const target = typeof a[0] === 'object' && a[0] !== null ? (a[0] as { port?: unknown }).port : a[0];
    if (Number(target) === port) {
      const write = socket.write as (...w: unknown[]) => boolean;
      socket.write = function (this: net.Socket, ...w: unknown[]) {
        counter.n++;
        return write.apply(this, w);
      } as typeof socket.write;
    }
    return socket;
  };
}

async function main() {
  const cfg = JSON.parse(process.env.BENCH_CHILD ?? '{}') as ChildConfig;
  const send = (m: FromChild) => process.send?.(m);
  const redisWrites = { n: 0 };
  let close: () => Promise<void>;
  let url: string;

  let metricsOf = async (): Promise<{ requests: number; degradedCalls: number }> => ({ requests: 0, degradedCalls: 0 });
  // Imported by role, so the bare proxy's process holds nothing of keygate.
  if (cfg.role === 'bare') {
    const { createBareProxy } = await import('./bare-proxy.js');
    const p = createBareProxy(cfg.upstream!);
    await new Promise<void>((resolve) => p.server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(p.server.address() as AddressInfo).port}`;
    close = p.close;
  } else {
    // First, as the production entry does (src/cli.ts): the V8 settings every keygate process runs with.
    await import('../src/ops/v8-flags.js');
    const { startApp } = await import('../src/app.js');
    const { settingsSchema } = await import('../src/config/settings.js');
    const { createLogger } = await import('../src/ops/logger.js');
    const { LogSink } = await import('../src/ops/log-sink.js');
    const { openDb } = await import('../src/db/index.js');
    const settings = settingsSchema.parse({
      HOST: '127.0.0.1',
      TRUST_PROXY: '127.0.0.1,::1',
      GATEWAY_SECRET: cfg.gatewaySecret,
      INTERNAL_TOKEN: cfg.internalToken,
      PLANS_FILE: cfg.plansFile,
      LOG_LEVEL: 'info',
      ...(cfg.upstream ? { UPSTREAM_URL: cfg.upstream } : {}),
      ...(cfg.redisUrl ? { REDIS_URL: cfg.redisUrl } : {}),
      ...(cfg.databaseUrl ? { DATABASE_URL: cfg.databaseUrl } : { DATA_DIR: 'memory://' }),
    });
    // pino at the production default level through the production output (a LogSink, as on stdout), to
    // a file: what a deployed gateway would pay for logging.
    const log = createLogger(settings.LOG_LEVEL, new LogSink(openSync(cfg.logFile, 'a')));
    const db = await openDb({ databaseUrl: cfg.databaseUrl, dataDir: 'memory://', schema: cfg.schema });
    if (cfg.role === 'gateway' && cfg.redisUrl)
      countRedisWrites(Number(new URL(cfg.redisUrl).port || 6379), redisWrites);
    // The stores are startApp's own, built from REDIS_URL as in production; only the key prefix is the bench's.
    const app = await startApp({
      mode: cfg.role,
      settings: settings as typeof settings & { GATEWAY_SECRET: string; INTERNAL_TOKEN: string },
      log,
      db,
      redisPrefix: cfg.redisPrefix,
      seed: cfg.seedFile ? JSON.parse(readFileSync(cfg.seedFile, 'utf8')) : undefined,
      ephemeralPorts: true,
      jobs: false,
    });
    url = (cfg.role === 'gateway' ? app.gatewayUrl : app.backendUrl)!;
    if (cfg.role === 'gateway') {
      // The gateway's own count of the requests it answered (its /metrics), so round trips per request
      // are counted on one side: autocannon does not count the requests in flight when it stops.
      // Also the store calls answered without Redis (the circuit breaker open): those make no round trip.
      metricsOf = async () => {
        const text = await (await fetch(`${app.adminUrl}/metrics`)).text();
        const sum = (name: string) => {
          let n = 0;
          for (const line of text.split('\n'))
            if (line.startsWith(name + '{') || line.startsWith(name + ' '))
              n += Number(line.slice(line.lastIndexOf(' ') + 1));
          return n;
        };
        return { requests: sum('keygate_requests_total'), degradedCalls: sum('keygate_degraded_calls_total') };
      };
    }
    close = async () => {
      await app.close(0);
      await db.close();
    };
  }

  let session: Session | null = null;
  process.on('message', async (m: ToChild) => {
    if (m.cmd === 'stats') {
      const mem = memory();
      const cpu = process.cpuUsage();
      send({
        cmd: 'stats',
        redisWrites: redisWrites.n,
        ...(await metricsOf()),
        rssBytes: mem.rss,
        peakRssBytes: mem.peak,
        heapUsedBytes: process.memoryUsage().heapUsed,
        cpuMicros: cpu.user + cpu.system,
      });
    } else if (m.cmd === 'profile-start') {
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
      send({ cmd: 'profile-started' });
    } else if (m.cmd === 'profile-stop') {
      if (session) {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(m.file, JSON.stringify(profile));
        session.disconnect();
        session = null;
      }
      send({ cmd: 'profiled', file: m.file });
    } else if (m.cmd === 'stop') {
      await close().catch(() => {});
      process.exit(0);
    }
  });
  process.on('disconnect', () => process.exit(0));
  send({ cmd: 'ready', url });
}

main().catch((err) => {
  process.send?.({ cmd: 'failed', error: (err as Error).stack ?? String(err) } satisfies FromChild);
  process.exit(1);
});

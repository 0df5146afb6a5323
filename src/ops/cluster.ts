// WORKERS (docs/settings.md): the gateway on several processes sharing its port. The primary accepts
// on PORT and hands each connection to a worker in turn (over the IPC channel, as node:cluster's own
// round robin does); it serves none itself. Owning the listener is what lets a drain stop accepting
// before any worker stops serving: with node:cluster's shared listener the primary kept accepting until
// the last worker left, then closed unanswered whatever it had accepted meanwhile (a reset for a new
// connection). The primary forks the workers, restarts one that crashes, forwards the
// signals of docs/decisions.md section 8 (SIGTERM/SIGINT drain every worker, then exit 0; SIGHUP reloads each),
// and serves ADMIN_PORT for the whole group: one admin listener per worker could not share a port and
// still answer for all of them, so each worker's admin server listens on a private port of its own and
// the primary's /readyz and /metrics gather theirs. Each worker opens its own Redis connection (it runs
// startApp like a single gateway); exact limits across processes need Redis, which settings.ts requires.
import cluster, { type Worker } from 'node:cluster';
import http from 'node:http';
import net, { Socket } from 'node:net';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { listenError } from '../config/errors.js';
import { adminPath, answerBudget, ANSWERS_PER_SECOND, boundAdminServer, shared } from './ops-server.js';

/** WORKERS as a number of processes: `auto` is the cores this process may use. */
export function workerCount(setting: string): number {
  return setting === 'auto' ? availableParallelism() : Number(setting);
}

/** What a worker tells the primary once its listeners accept. */
interface ReadyMessage {
  type: 'keygate:worker-ready';
  gatewayUrl: string | null;
  adminUrl: string | null;
}

/** What the primary sends a worker: a connection to serve (with its socket), or the drain. */
interface PrimaryMessage {
  type: 'keygate:connection' | 'keygate:drain';
}

/**
 * In a worker: serve the connections the primary hands over, and drain when it says so. The drain
 * comes on the same channel as the connections, after the last of them: a signal could overtake a
 * connection still on its way, which would then find the worker gone.
 */
export function servePrimaryHandoffs(accept: (socket: Socket) => void, drain: () => void): void {
  process.on('message', (msg: PrimaryMessage, handle: unknown) => {
    if (msg?.type === 'keygate:connection' && handle instanceof Socket) accept(handle);
    else if (msg?.type === 'keygate:drain') drain();
  });
}

/** In a worker: tell the primary this process serves (its gateway and private admin URLs). */
export function announceWorkerReady(gatewayUrl: string | null, adminUrl: string | null): void {
  const msg: ReadyMessage = { type: 'keygate:worker-ready', gatewayUrl, adminUrl };
  process.send?.(msg);
}

/** The id (1..N) the primary gave this worker; stable across restarts, the `worker` label of /metrics. */
export function workerId(): string {
  return process.env.KEYGATE_WORKER_ID ?? '0';
}

export interface PrimaryOptions {
  count: number;
  /** The compiled or TypeScript entry the workers run (cli.ts/cli.js), with this process's arguments. */
  entry: string;
  /** ADMIN_HOST (or HOST): where the group's ADMIN_PORT listens. */
  host: string;
  /** HOST and PORT: the primary's listener, whose connections the workers serve. */
  gatewayHost: string;
  port: number;
  adminPort: number;
  /** ADMIN_MAX_CONNECTIONS. */
  adminMaxConnections?: number;
  drainMs: number;
  log: Logger;
  /** Environment for every worker on top of this one's (all-in-one: the backend's URL, the start's secrets). */
  workerEnv?: Record<string, string>;
  /** After the last worker exits on a signal: all-in-one closes its backend here. */
  onStopped?: () => Promise<void>;
  /** SIGHUP, besides passing it to every worker: all-in-one reloads its backend's plans and routes. */
  onReload?: () => void;
}

interface Slot {
  id: number;
  worker: Worker | null;
  ready: boolean;
  adminUrl: string | null;
  startedAt: number;
  restarts: number;
}

/** The primary's workers and where their start and stop stand; shared by the functions below. */
interface Group {
  o: PrimaryOptions;
  log: Logger;
  slots: Slot[];
  stopping: boolean;
  firstFailure: number | null;
  exitCodes: number[];
  /** Resolves once every worker serves; rejects when one cannot start. */
  started: Promise<void>;
  allReady(): void;
  startFailed(code: number): void;
  /** Resolves once every worker has exited after the stop. */
  allExited: Promise<void>;
  maybeFinished(): void;
}

function createGroup(o: PrimaryOptions, log: Logger): Group {
  let allReady!: () => void;
  let startFailed!: (code: number) => void;
  const started = new Promise<void>((resolve, reject) => {
    allReady = resolve;
    startFailed = (code) =>
      reject(Object.assign(new Error(`a worker exited with code ${code} while starting`), { exitCode: code }));
  });
  let finished!: () => void;
  const allExited = new Promise<void>((r) => (finished = r));
  const slots: Slot[] = [];
  return {
    o,
    log,
    slots,
    stopping: false,
    firstFailure: null,
    exitCodes: [],
    started,
    allReady,
    startFailed,
    allExited,
    maybeFinished: () => {
      if (slots.every((s) => s.worker === null)) finished();
    },
  };
}

/** Fork the slot's worker (again, after a crash). Its admin server listens on a loopback port of its own choosing, told in its ready message. */
function fork(g: Group, slot: Slot): void {
  if (g.stopping) return;
  // ADMIN_PORT 0 says what the worker does with the group's setting: nothing.
  const w = cluster.fork({
    ...g.o.workerEnv,
    KEYGATE_WORKER_ID: String(slot.id),
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: '0',
  });
  slot.worker = w;
  slot.ready = false;
  slot.startedAt = Date.now();
  w.on('message', (msg: ReadyMessage) => {
    if (msg?.type !== 'keygate:worker-ready') return;
    slot.ready = true;
    slot.adminUrl = msg.adminUrl;
    g.log.info({ worker: slot.id, workerPid: w.process.pid }, 'worker serving');
    if (g.slots.every((s) => s.ready)) g.allReady();
  });
  w.on('exit', (code, signal) => workerExited(g, slot, w, code, signal));
}

/** A worker's exit: counted while stopping, fatal while starting, else a crash to restart. */
function workerExited(g: Group, slot: Slot, w: Worker, code: number | null, signal: string | null): void {
  const wasReady = slot.ready;
  slot.ready = false;
  slot.worker = null;
  if (g.stopping) {
    g.exitCodes.push(code ?? 1);
    return g.maybeFinished();
  }
  if (!wasReady && slot.restarts === 0) {
    // A worker that cannot start (a bad setting: it printed its one line) stops the whole start.
    g.firstFailure ??= code ?? 1;
    return g.startFailed(g.firstFailure);
  }
  // A crash: restart it, sooner if it had run a while (a worker that crashes at once waits longer).
  const delay = Date.now() - slot.startedAt > 30_000 ? 100 : Math.min(30_000, 1000 * 2 ** Math.min(slot.restarts, 5));
  slot.restarts++;
  g.log.error(
    { worker: slot.id, workerPid: w.process.pid, code, signal, restartInMs: delay },
    'worker exited; restarting it',
  );
  setTimeout(() => fork(g, slot), delay).unref();
}

/** The group's listener: connections handed out in turn to the workers that serve, paused until a worker reads them. */
function handoffListener(g: Group): net.Server {
  let turn = 0;
  return net.createServer({ pauseOnConnect: true }, (socket) => {
    socket.on('error', () => {});
    const serving = g.slots.filter((s) => s.ready && s.worker?.isConnected());
    if (serving.length === 0) return void socket.destroy();
    const w = serving[turn++ % serving.length].worker!;
    w.send({ type: 'keygate:connection' } satisfies PrimaryMessage, socket, (err) => {
      if (err) socket.destroy();
    });
  });
}

/** SIGTERM or SIGINT: stop accepting, drain every worker, then exit (1 if one did not drain cleanly). */
function stopGroup(g: Group, listener: net.Server, admin: http.Server, signal: NodeJS.Signals): void {
  if (g.stopping) return;
  g.stopping = true;
  const { o, log, slots } = g;
  log.info({ signal, drainMs: o.drainMs, workers: slots.length }, 'shutting down: draining every worker');
  // Accepting stops first; every connection accepted so far was handed out and is served, and the
  // drain reaches each worker behind the connections sent to it.
  if (listener.listening) listener.close();
  for (const s of slots) {
    if (s.worker?.isConnected()) s.worker.send({ type: 'keygate:drain' } satisfies PrimaryMessage);
    else s.worker?.process.kill('SIGTERM');
  }
  // Each worker bounds its own drain by DRAIN_TIMEOUT_MS; this only catches a worker that hangs.
  const killTimer = setTimeout(() => {
    for (const s of slots) s.worker?.process.kill('SIGKILL');
  }, o.drainMs + 5_000);
  killTimer.unref();
  g.maybeFinished();
  void g.allExited
    .then(async () => {
      clearTimeout(killTimer);
      // A scraper's keep-alive connection would hold close() open: closed along with it.
      const closed = new Promise((r) => admin.close(r));
      admin.closeAllConnections();
      await closed;
      await o.onStopped?.();
      const failed = g.exitCodes.some((c) => c !== 0);
      log.info({ exitCodes: g.exitCodes }, failed ? 'stopped; a worker did not drain cleanly' : 'stopped');
      process.exit(failed ? 1 : 0);
    })
    .catch((err) => {
      log.error({ err: (err as Error).message }, 'shutdown failed');
      process.exit(1);
    });
}

/** Listen on `port` at `host`; resolves with the URL a client on this machine reaches it at. */
function listenAt(server: net.Server, setting: string, host: string, port: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    server.once('error', (err) => reject(listenError(setting, host, port, err)));
    server.listen(port, host, () =>
      resolve(
        `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${(server.address() as net.AddressInfo).port}`,
      ),
    );
  });
}

/** The primary: forks `count` workers and resolves with the gateway's URL once every one of them serves. */
export async function runPrimary(o: PrimaryOptions): Promise<{ gatewayUrl: string; adminUrl: string }> {
  const g = createGroup(o, o.log.child({ c: 'cluster', pid: process.pid }));

  // Every worker runs this program's entry with the same arguments and node flags (tsx under `npm start`).
  cluster.setupPrimary({ exec: o.entry, args: process.argv.slice(2) });

  const admin = boundAdminServer(
    createClusterAdmin(g.slots, () => g.stopping),
    o.adminMaxConnections ?? 32,
  );
  const adminUrl = await listenAt(admin, 'ADMIN_PORT', o.host, o.adminPort);
  const listener = handoffListener(g);
  process.on('SIGTERM', () => stopGroup(g, listener, admin, 'SIGTERM'));
  process.on('SIGINT', () => stopGroup(g, listener, admin, 'SIGINT'));
  process.on('SIGHUP', () => {
    o.onReload?.();
    for (const s of g.slots) s.worker?.process.kill('SIGHUP');
  });

  for (let id = 1; id <= o.count; id++)
    g.slots.push({ id, worker: null, ready: false, adminUrl: null, startedAt: 0, restarts: 0 });
  for (const s of g.slots) fork(g, s);
  let gatewayUrl: string;
  try {
    await g.started;
    gatewayUrl = await listenAt(listener, 'PORT', o.gatewayHost, o.port);
  } catch (err) {
    g.stopping = true;
    for (const s of g.slots) s.worker?.process.kill('SIGTERM');
    admin.close();
    throw err;
  }
  g.log.info({ workers: o.count, gateway: gatewayUrl, admin: adminUrl }, 'keygate gateway listening on every worker');
  return { gatewayUrl, adminUrl };
}

/** GET a worker's private admin page; null when it does not answer within a second. */
async function fromWorker(slot: Slot, path: string): Promise<{ status: number; text: string; type: string } | null> {
  if (!slot.ready || !slot.adminUrl) return null;
  try {
    const res = await fetch(slot.adminUrl + path, { signal: AbortSignal.timeout(1_000) });
    return { status: res.status, text: await res.text(), type: res.headers.get('content-type') ?? 'text/plain' };
  } catch {
    return null;
  }
}

/**
 * ADMIN_PORT of the group. /healthz: the primary is alive. /readyz: 200 only while every worker is
 * ready (the body lists each worker, with the dependency checks of the first that answered).
 * /metrics: every worker's series with a `worker` label (1..N, stable across restarts), each family
 * once, plus the primary's own restart counter. /.well-known/jwks.json: a worker's (they share the keys).
 */
function createClusterAdmin(slots: Slot[], stopping: () => boolean): http.Server {
  // Probes arriving together share one round of questions to the workers; answers are budgeted as a
  // worker's are (src/ops/ops-server.ts).
  const readiness = shared(() => Promise.all(slots.map((s) => fromWorker(s, '/readyz'))));
  const budget = answerBudget(ANSWERS_PER_SECOND);
  return http.createServer((req, res) => budget(() => void answerCluster(slots, stopping, readiness, req, res)));
}

async function answerCluster(
  slots: Slot[],
  stopping: () => boolean,
  readiness: () => Promise<({ status: number; text: string; type: string } | null)[]>,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const path = adminPath(req, res);
  if (path === null) return;
  if (path === '/readyz') {
    const answers = await readiness();
    const workers = slots.map((s, i) => ({
      worker: s.id,
      pid: s.worker?.process.pid ?? null,
      ready: answers[i]?.status === 200,
    }));
    const ok = !stopping() && workers.every((w) => w.ready);
    const first = answers.find((a) => a !== null);
    let checks: unknown = {};
    try {
      checks = first ? ((JSON.parse(first.text) as { checks?: unknown }).checks ?? {}) : {};
    } catch {
      checks = {};
    }
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
    return void res.end(JSON.stringify({ status: ok ? 'ready' : 'not_ready', checks, workers }));
  }
  if (path === '/metrics') {
    const pages = await Promise.all(slots.map((s) => fromWorker(s, '/metrics')));
    const text = mergeMetrics(slots.map((s, i) => ({ worker: String(s.id), text: pages[i]?.text ?? '' })));
    const restarts = slots.map((s) => `keygate_worker_restarts_total{worker="${s.id}"} ${s.restarts}`).join('\n');
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
    return void res.end(
      `${text}# HELP keygate_worker_restarts_total Workers restarted by the primary after a crash.\n# TYPE keygate_worker_restarts_total counter\n${restarts}\n`,
    );
  }
  if (path === '/.well-known/jwks.json') {
    for (const s of slots) {
      const page = await fromWorker(s, path);
      if (!page) continue;
      res.writeHead(page.status, { 'content-type': page.type, 'cache-control': 'public, max-age=300' });
      return void res.end(page.text);
    }
    res.writeHead(503, { 'content-type': 'text/plain' });
    return void res.end('no worker answered\n');
  }
  res.writeHead(404, { 'content-type': 'text/plain' });
  res.end('not found\n');
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{?)/;

/**
 * Prometheus text of several workers as one page: each family's HELP and TYPE once, then every
 * worker's samples of it with `worker="<id>"` as their first label (sum them in queries:
 * `sum without (worker) (...)`).
 */
export function mergeMetrics(pages: { worker: string; text: string }[]): string {
  const families = new Map<string, { head: string[]; samples: string[] }>();
  for (const { worker, text } of pages) {
    let current: { head: string[]; samples: string[] } | undefined;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (meta) {
        let fam = families.get(meta[2]);
        if (!fam) families.set(meta[2], (fam = { head: [], samples: [] }));
        if (fam.head.length < 2 && !fam.head.some((h) => h.startsWith(`# ${meta[1]} `))) fam.head.push(line);
        current = fam;
        continue;
      }
      if (line.startsWith('#') || !current) continue;
      const m = SAMPLE.exec(line)!;
      const rest = line.slice(m[0].length);
      const labels =
        m[2] && !rest.startsWith('}') ? `{worker="${worker}",` : m[2] ? `{worker="${worker}"` : `{worker="${worker}"}`;
      current.samples.push(m[1] + labels + rest);
    }
  }
  let out = '';
  for (const fam of families.values())
    out += fam.head.join('\n') + '\n' + (fam.samples.length ? fam.samples.join('\n') + '\n' : '');
  return out;
}

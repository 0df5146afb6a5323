// Several real upstream processes for the services tests and the failover benchmark: each a child
// running test/fixtures/upstream-server.mjs (JSON naming itself, echoing the method, the path and the
// X-Request-Id), switched at run time to hang, to answer 503 or to drop its connections, killed with
// SIGKILL and restarted on the same address. Each logs the requests that reached it to a file that
// survives the kill, so a test can say which target received which request.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './redis-server.js';
import type { ServiceFile } from '../../src/config/services.js';

const SERVER = resolve('test/fixtures/upstream-server.mjs');

export type UpstreamMode = 'ok' | 'hang' | '503' | 'close';

/** One request as the upstream logged it when its head arrived. */
export interface Received {
  at: number;
  method: string;
  path: string;
  requestId: string;
}

export interface UpstreamSpec {
  /** Default `u1`, `u2`, ... */
  name?: string;
  /** 127.0.0.1 unless given (any 127.x.y.z is on the loopback interface). */
  host?: string;
  /** A free port unless given (two specs on different hosts may share one, as a DNS name's addresses do). */
  port?: number;
}

export interface Upstream {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  /** `http://host:port` */
  readonly url: string;
  alive(): boolean;
  mode(mode: UpstreamMode): Promise<void>;
  delay(ms: number): Promise<void>;
  /** SIGKILL; resolves once it has exited. */
  kill(): Promise<void>;
  /** Starts again on the same address, answering normally (after a kill, or a stop). */
  restart(): Promise<void>;
  /** Every request that reached it, across restarts. */
  received(): Received[];
}

export interface UpstreamFleet {
  targets: Upstream[];
  /** Which upstream received each request id (an id received by two shows up under both). */
  receivers(): Map<string, string[]>;
  close(): Promise<void>;
}

interface Running {
  child: ChildProcess;
  pending: Map<number, () => void>;
}

function spawnServer(name: string, host: string, port: number, log: string, delayMs: number) {
  return new Promise<Running>((resolveStart, reject) => {
    const child = fork(SERVER, [], {
      env: {
        ...process.env,
        UPSTREAM_NAME: name,
        UPSTREAM_HOST: host,
        UPSTREAM_PORT: String(port),
        UPSTREAM_LOG: log,
        UPSTREAM_DELAY_MS: String(delayMs),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
    });
    const running: Running = { child, pending: new Map() };
    child.on('message', (msg: { listening?: number; error?: string; ack?: number }) => {
      if (msg.listening !== undefined) resolveStart(running);
      else if (msg.error) reject(new Error(`upstream ${name} on ${host}:${port}: ${msg.error}`));
      else if (msg.ack !== undefined) {
        running.pending.get(msg.ack)?.();
        running.pending.delete(msg.ack);
      }
    });
    child.once('exit', (code, signal) => {
      reject(new Error(`upstream ${name} exited before listening (${signal ?? code})`));
      for (const done of running.pending.values()) done();
      running.pending.clear();
    });
  });
}

async function startOne(spec: Required<UpstreamSpec>, dir: string, delayMs: number): Promise<Upstream> {
  const { name, host, port } = spec;
  const log = join(dir, `${name}.log`);
  writeFileSync(log, '');
  let running: Running | null = await spawnServer(name, host, port, log, delayMs);
  let seq = 0;
  const control = (msg: object) =>
    new Promise<void>((done, reject) => {
      if (!running) return reject(new Error(`upstream ${name} is not running`));
      const id = ++seq;
      running.pending.set(id, done);
      running.child.send({ ...msg, id });
    });
  async function kill() {
    if (!running) return;
    const { child } = running;
    running = null;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
  return {
    name,
    host,
    port,
    url: `http://${host}:${port}`,
    alive: () => running !== null,
    mode: (mode) => control({ mode }),
    delay: (ms) => control({ delayMs: (delayMs = ms) }),
    kill,
    async restart() {
      await kill();
      // The address was just released; another bind may race it briefly on a busy machine.
      for (let attempt = 0; ; attempt++) {
        try {
          running = await spawnServer(name, host, port, log, delayMs);
          return;
        } catch (err) {
          if (attempt >= 20 || !String(err).includes('EADDRINUSE')) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    },
    received: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [at, method, path, requestId = ''] = line.split(' ');
          return { at: Number(at), method, path, requestId };
        }),
  };
}

/** `specs` upstreams (a number: that many on 127.0.0.1), each answering after `delayMs`. */
export async function startFleet(
  specs: number | UpstreamSpec[],
  opts: { delayMs?: number } = {},
): Promise<UpstreamFleet> {
  const list: UpstreamSpec[] = typeof specs === 'number' ? Array.from({ length: specs }, () => ({})) : specs;
  const dir = mkdtempSync(join(tmpdir(), 'keygate-fleet-'));
  const targets: Upstream[] = [];
  const close = async () => {
    await Promise.all(targets.map((t) => t.kill()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const [i, spec] of list.entries()) {
      const full = {
        name: spec.name ?? `u${i + 1}`,
        host: spec.host ?? '127.0.0.1',
        port: spec.port ?? (await freePort()),
      };
      targets.push(await startOne(full, dir, opts.delayMs ?? 0));
    }
  } catch (err) {
    await close();
    throw err;
  }
  return {
    targets,
    receivers() {
      const by = new Map<string, string[]>();
      for (const t of targets) {
        for (const r of t.received()) {
          if (!r.requestId) continue;
          const names = by.get(r.requestId) ?? [];
          names.push(t.name);
          by.set(r.requestId, names);
        }
      }
      return by;
    },
    close,
  };
}

/**
 * config/routes.json with a `services` section (src/config/services.ts) and each route's `service` as
 * `serviceOf` names it (undefined: the route stays on the default service), written to `file`.
 */
export function writeRoutesFile(
  file: string,
  services: Record<string, ServiceFile>,
  serviceOf: (route: { method: string; path: string }) => string | undefined,
): void {
  const routes = JSON.parse(readFileSync(resolve('config/routes.json'), 'utf8')) as {
    v2: { method: string; path: string; gateway?: true; service?: string }[];
    v1: { method: string; path: string; gateway?: true; service?: string }[];
  };
  // A route the gateway answers itself goes to no service.
  for (const r of [...routes.v2, ...routes.v1].filter((route) => !route.gateway)) {
    const service = serviceOf(r);
    if (service) r.service = service;
  }
  writeFileSync(file, JSON.stringify({ ...routes, services }, null, 1));
}

// A Redis server of the test's own on a loopback port, to stop and start at will (fault injection)
// or to build a small Redis Cluster.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listenLocal } from './listen.js';

// Ports handed out by freePort are drawn below Linux's ephemeral range (32768-60999), where a client
// connection's own local port can never take one between the pick and the bind, and from a band of
// this vitest worker's own (VITEST_POOL_ID), so files running side by side never pick the same port.
const PORT_BASE = 12_000;
const BAND = 2_000;
const handedOut = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on, and that this process has not handed out before. */
export async function freePort(): Promise<number> {
  const band = (Number(process.env.VITEST_POOL_ID) || 0) % 10;
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = PORT_BASE + band * BAND + Math.floor(Math.random() * BAND);
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  // The band is crowded (other programs on this machine): whatever port the system gives.
  const srv = net.createServer();
  const { port } = await listenLocal(srv);
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

async function waitForPort(port: number, up: boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (open === up) return;
    if (Date.now() > deadline) throw new Error(`port ${port} did not go ${up ? 'up' : 'down'}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface OwnRedis {
  port: number;
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The `process_id` of the Redis answering on `port` (null when none answers INFO). */
function redisPid(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const done = (pid: number | null) => (socket.destroy(), resolve(pid));
    socket.setTimeout(5_000, () => done(null));
    socket.once('error', () => done(null));
    socket.once('connect', () => socket.write('*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk;
      const pid = /process_id:(\d+)/.exec(reply);
      if (pid) done(Number(pid[1]));
    });
  });
}

/**
 * redis-server on `port`, up and answering as itself: a port that another program bound first (it
 * may have been taken between freePort's pick and this bind) makes it exit, or answer with another
 * pid, and the start fails with `addressInUse` set.
 */
async function launch(port: number, dir: string, extraArgs: string[]): Promise<ChildProcess> {
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
    { stdio: 'ignore' },
  );
  const exited = new Promise<'exited'>((resolve) => proc.once('exit', () => resolve('exited')));
  const up = await Promise.race([
    waitForPort(port, true).then(
      () => 'up' as const,
      () => 'timeout' as const,
    ),
    exited,
  ]);
  if (up === 'up' && (await redisPid(port)) === proc.pid) return proc;
  proc.kill('SIGKILL');
  if (up === 'timeout') throw new Error(`redis-server did not come up on 127.0.0.1:${port}`);
  throw Object.assign(new Error(`redis-server could not listen on 127.0.0.1:${port}`), { addressInUse: true });
}

export async function ownRedis(extraArgs: string[] = [], port?: number): Promise<OwnRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'kg-redis-'));
  // The first start may try other ports (when none was asked for); later starts reuse the one it got.
  let p = port ?? (await freePort());
  let proc: ChildProcess | null = null;
  for (let attempt = 1; ; attempt++) {
    try {
      proc = await launch(p, dir, extraArgs);
      break;
    } catch (err) {
      if (port !== undefined || attempt >= 5 || !(err as { addressInUse?: boolean }).addressInUse) throw err;
      p = await freePort();
    }
  }
  const r: OwnRedis = {
    port: p,
    url: `redis://127.0.0.1:${p}`,
    async start() {
      if (!proc) proc = await launch(p, dir, extraArgs);
    },
    async stop() {
      if (!proc) return;
      proc.kill('SIGKILL');
      proc = null;
      await waitForPort(p, false);
    },
  };
  return r;
}

/** True when a `redis-server` binary is on PATH (every node-svc machine; not every laptop). */
export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

// A Redis server of the test's own on a loopback port, to stop and start at will (fault injection)
// or to build a small Redis Cluster.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
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

export async function ownRedis(extraArgs: string[] = [], port?: number): Promise<OwnRedis> {
  const p = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'kg-redis-'));
  let proc: ChildProcess | null = null;
  const r: OwnRedis = {
    port: p,
    url: `redis://127.0.0.1:${p}`,
    async start() {
      proc = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs], { stdio: 'ignore' });
      await waitForPort(p, true);
    },
    async stop() {
      if (!proc) return;
      proc.kill('SIGKILL');
      proc = null;
      await waitForPort(p, false);
    },
  };
  await r.start();
  return r;
}

/** True when a `redis-server` binary is on PATH (every node-svc machine; not every laptop). */
export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

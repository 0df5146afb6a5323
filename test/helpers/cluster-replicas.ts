// A Redis Cluster of three primaries with one replica each on loopback ports, for failover tests.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './redis-server.js';

const run = promisify(execFile);

export interface ReplicatedCluster {
  /** `host:port` of every node (REDIS_CLUSTER_NODES). */
  nodes: string[];
  /** The ports of the current primaries. */
  primaries(): Promise<number[]>;
  /** The port of the primary that owns each slot now (0 for a slot no primary owns). */
  slotOwners(): Promise<(slot: number) => number>;
  kill(port: number): void;
  /** SIGSTOP / SIGCONT: a node whose connections stay open and silent. */
  pause(port: number): void;
  resume(port: number): void;
  stop(): void;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  try {
    return (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 })).stdout;
  } catch {
    return '';
  }
}

export async function startReplicatedCluster(nodeTimeoutMs = 3_000, fullCoverage = false): Promise<ReplicatedCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'kg-cluster-r-'));
  const procs = new Map<number, ChildProcess>();
  const ports: number[] = [];
  for (let i = 0; i < 6; i++) ports.push(await freePort());
  for (const p of ports) {
    const d = join(dir, String(p));
    mkdirSync(d, { recursive: true });
    procs.set(
      p,
      spawn(
        'redis-server',
        [
          '--port',
          String(p),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(d, 'nodes.conf'),
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          // The healthy primaries keep answering while one is lost (the default refuses every command,
          // CLUSTERDOWN, until its replica is promoted); deploy/README.md recommends the same.
          '--cluster-require-full-coverage',
          fullCoverage ? 'yes' : 'no',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          d,
        ],
        { stdio: 'ignore' },
      ),
    );
  }
  for (const p of ports) {
    for (let i = 0; (await cli(p, 'ping')).trim() !== 'PONG'; i++) {
      if (i > 200) throw new Error(`redis on ${p} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  await run(
    'redis-cli',
    ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
    { timeout: 30_000 },
  );
  const cluster: ReplicatedCluster = {
    nodes: ports.map((p) => `127.0.0.1:${p}`),
    async primaries() {
      for (const p of ports) {
        if (!procs.has(p)) continue;
        const out = await cli(p, 'cluster', 'nodes');
        if (!out) continue;
        return out
          .split('\n')
          .filter((l) => /\bmaster\b/.test(l) && !/\bfail\b/.test(l))
          .map((l) => Number(/:(\d+)@/.exec(l)?.[1]));
      }
      return [];
    },
    async slotOwners() {
      const owners = new Uint16Array(16384);
      for (const p of procs.keys()) {
        const out = await cli(p, 'cluster', 'nodes');
        if (!out) continue;
        for (const line of out.split('\n')) {
          if (!/\bmaster\b/.test(line) || /\bfail\b/.test(line)) continue;
          const port = Number(/:(\d+)@/.exec(line)?.[1]);
          // Fields 9 and on: slot ranges `a-b` or single slots (importing/migrating entries in brackets).
          for (const range of line.trim().split(' ').slice(8)) {
            const m = /^(\d+)(?:-(\d+))?$/.exec(range);
            if (!m) continue;
            for (let slot = Number(m[1]); slot <= Number(m[2] ?? m[1]); slot++) owners[slot] = port;
          }
        }
        break;
      }
      return (slot) => owners[slot];
    },
    pause(port) {
      procs.get(port)?.kill('SIGSTOP');
    },
    resume(port) {
      procs.get(port)?.kill('SIGCONT');
    },
    kill(port) {
      procs.get(port)?.kill('SIGKILL');
      procs.delete(port);
    },
    stop() {
      for (const p of procs.values()) p.kill('SIGKILL');
    },
  };
  // Every node agrees the cluster is ok and each primary has its replica in sync.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const infos = await Promise.all(ports.map((p) => cli(p, 'cluster', 'info')));
    const replication = await Promise.all(ports.map((p) => cli(p, 'info', 'replication')));
    const synced = replication.filter((r) => r.includes('master_link_status:up')).length === 3;
    if (synced && infos.every((i) => i.includes('cluster_state:ok'))) return cluster;
    if (Date.now() > deadline) throw new Error('replicated cluster did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
}

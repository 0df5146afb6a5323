// vitest globalSetup of the `cluster` project: a three-primary Redis Cluster on loopback ports,
// started for the run and stopped after it. The gateway and limiter suites then run against it.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { freePort } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisClusterNodes: string;
  }
}

const procs: ChildProcess[] = [];
let dir = '';

export default async function setup(project: TestProject) {
  dir = mkdtempSync(join(tmpdir(), 'kg-cluster-'));
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) ports.push(await freePort());
  for (const p of ports) {
    const d = join(dir, String(p));
    execFileSync('mkdir', ['-p', d]);
    procs.push(
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
  for (const p of ports) await waitPing(p);
  execFileSync(
    'redis-cli',
    ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
    { stdio: 'ignore' },
  );
  for (const p of ports) await waitClusterOk(p);
  project.provide('redisClusterNodes', ports.map((p) => `127.0.0.1:${p}`).join(','));
  return () => {
    for (const c of procs) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
}

async function waitPing(port: number) {
  for (let i = 0; i < 200; i++) {
    try {
      if (
        execFileSync('redis-cli', ['-p', String(port), 'ping'])
          .toString()
          .trim() === 'PONG'
      )
        return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis on ${port} did not start`);
}

async function waitClusterOk(port: number) {
  for (let i = 0; i < 200; i++) {
    const info = execFileSync('redis-cli', ['-p', String(port), 'cluster', 'info']).toString();
    if (info.includes('cluster_state:ok')) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`cluster on ${port} not ok`);
}

// A Redis primary, one replica and three sentinels on loopback ports, for failover tests. The
// sentinels judge the primary down after `downAfterMs` without an answer and promote the replica.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, ownRedis, type OwnRedis } from './redis-server.js';

const run = promisify(execFile);

export interface SentinelGroup {
  name: string;
  primary: OwnRedis;
  replica: OwnRedis;
  /** `host:port` of each sentinel (REDIS_SENTINELS). */
  sentinels: string[];
  /** The port of the primary the sentinels name now. */
  currentPrimaryPort(): Promise<number>;
  /**
   * Waits up to `ms` for the replica to have every byte the primary wrote; the bytes still missing
   * then (0 when in sync).
   */
  replicaCatchUp(ms: number): Promise<number>;
  stop(): Promise<void>;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  try {
    return (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 })).stdout;
  } catch {
    return '';
  }
}

export async function startSentinelGroup(downAfterMs = 1_000): Promise<SentinelGroup> {
  const name = 'kgprimary';
  const primary = await ownRedis();
  const replica = await ownRedis(['--replicaof', '127.0.0.1', String(primary.port)]);
  const procs: ChildProcess[] = [];
  const sentinels: string[] = [];
  for (let n = 0; n < 3; n++) {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'kg-sentinel-'));
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
        `sentinel failover-timeout ${name} 10000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    procs.push(spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' }));
    sentinels.push(`127.0.0.1:${port}`);
  }
  const group: SentinelGroup = {
    name,
    primary,
    replica,
    sentinels,
    async currentPrimaryPort() {
      const reply = await cli(portOf(sentinels[0]), 'sentinel', 'get-master-addr-by-name', name);
      return Number(reply.trim().split('\n')[1] ?? 0);
    },
    async replicaCatchUp(ms) {
      const offset = async (port: number, field: string) =>
        Number(new RegExp(`${field}:(\\d+)`).exec(await cli(port, 'info', 'replication'))?.[1] ?? -1);
      const deadline = Date.now() + ms;
      for (;;) {
        const missing =
          (await offset(primary.port, 'master_repl_offset')) - (await offset(replica.port, 'slave_repl_offset'));
        if (missing <= 0 || Date.now() > deadline) return Math.max(0, missing);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop() {
      for (const p of procs) p.kill('SIGKILL');
      await primary.stop();
      await replica.stop();
    },
  };
  // Every sentinel knows the primary and the two others (needed to elect the one that fails it
  // over), and the replica is in sync.
  const deadline = Date.now() + 20_000;
  for (;;) {
    const masters = await Promise.all(sentinels.map((s) => cli(portOf(s), 'sentinel', 'master', name)));
    const known = masters.every((m) => /num-other-sentinels\n2\n/.test(m) && m.includes(`\nport\n${primary.port}\n`));
    const synced = (await cli(replica.port, 'info', 'replication')).includes('master_link_status:up');
    if (known && synced) break;
    if (Date.now() > deadline) throw new Error('sentinel group did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
  return group;
}

const portOf = (hostPort: string) => Number(hostPort.split(':')[1]);

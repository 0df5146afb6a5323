// Issue 36 item 3: a monthly quota against a Redis that loses its counts. Two real gateway programs
// (`keygate gateway`, closed failure mode so that only Redis admits) share one PostgreSQL schema and a
// Redis of this run's own; an organization with a quota of QUOTA spends SPENT_BEFORE of it, then Redis
// loses the month's counter:
//   restart   the redis-server is killed and started again without persistence (empty);
//   sentinel  the replica is restarted (empty, resynchronising: the primary delays the transfer) and
//             the primary killed, so the sentinels promote the empty replica;
//   stop      no loss: both programs are stopped (SIGTERM) long before their next checkpoint, and
//             what the database holds then is reported (checkpointBefore).
// Then requests are sent through both programs until RETRIES_AFTER of them were answered by Redis
// again (200 or 429); what was admitted in all must stay within the quota plus the documented bound
// (docs/limits.md, Monthly quotas). Used by test/ops/month-durability.test.ts (one run each) and
// bench/diagnostics/month-outage.ts (several runs, the figures of docs/redis.md).
import { execFile, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../../src/db/index.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { seedWith, K } from '../fixtures/seed.js';
import { schemaUrl, spawnGatewayOn } from './gateway-program.js';
import { ownRedis, type OwnRedis } from './redis-server.js';
import { startSentinelGroup, type SentinelGroup } from './sentinel.js';
import { listenLocal } from './listen.js';

const run = promisify(execFile);

export const QUOTA = 20;
export const SPENT_BEFORE = 12;
const RETRIES_AFTER = 30;
/** The programs' checkpoint interval (MONTH_CHECKPOINT_MS) in these runs. */
export const CHECKPOINT_MS = 200;

export interface MonthOutageRun {
  kind: MonthOutageKind;
  settle: boolean;
  checkpointMs: number;
  quota: number;
  admittedBefore: number;
  admittedAfter: number;
  admitted: number;
  /** The month's count in PostgreSQL before the outage (null: no such table). */
  checkpointBefore: number | null;
  refusedAfter: number;
  unavailableAfter: number;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  return (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 })).stdout;
}

/**
 * One run. `db` is a migrated schema of this run's own (dropped by the caller); `pgUrl` the server's
 * URL without a search path.
 */
export type MonthOutageKind = 'restart' | 'sentinel' | 'stop';

export async function monthOutage(
  kind: MonthOutageKind,
  db: Db,
  pgUrl: string,
  opts: {
    /** false: Redis loses the count right after the last spend, not waiting for a checkpoint. */
    settle?: boolean;
    /** The programs' MONTH_CHECKPOINT_MS (CHECKPOINT_MS; the stop run: 300000, no timed checkpoint). */
    checkpointMs?: number;
  } = {},
): Promise<MonthOutageRun> {
  const settle = opts.settle ?? true;
  const checkpointMs = opts.checkpointMs ?? (kind === 'stop' ? 300_000 : CHECKPOINT_MS);
  await applySeed(db, parseSeed(seedWith()));
  await db.query('UPDATE organizations SET monthly_quota = $1 WHERE id = 1', [QUOTA]);
  const upstream = http.createServer((req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end('{"data":[]}');
  });
  const upstreamPort = (await listenLocal(upstream)).port;
  let redis: OwnRedis | undefined;
  let group: SentinelGroup | undefined;
  const programs: ChildProcess[] = [];
  try {
    let redisEnv: Record<string, string>;
    if (kind !== 'sentinel') {
      redis = await ownRedis();
      redisEnv = { REDIS_URL: redis.url };
    } else {
      group = await startSentinelGroup(1_000);
      redisEnv = { REDIS_SENTINELS: group.sentinels.join(','), REDIS_SENTINEL_NAME: group.name };
    }
    const prefix = `mo${randomBytes(4).toString('hex')}:`;
    const ports: number[] = [];
    const outputs: (() => string)[] = [];
    for (let n = 0; n < 2; n++) {
      const { child, port, output, ready } = await spawnGatewayOn(schemaUrl(pgUrl, db.schema), {
        ...redisEnv,
        REDIS_KEY_PREFIX: prefix,
        RATE_LIMIT_FAILURE_MODE: 'closed',
        MONTH_CHECKPOINT_MS: String(checkpointMs),
        UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      });
      programs.push(child);
      outputs[n] = output;
      await ready;
      ports.push(port);
    }

    let sent = 0;
    // Each request from an address of its own: the address layer (100 a minute) never refuses.
    const one = async (): Promise<number> => {
      const port = ports[sent % 2];
      const ip = `10.36.${Math.floor(sent / 250)}.${(sent % 250) + 1}`;
      sent++;
      return new Promise((resolve) => {
        const req = http.get(
          {
            host: '127.0.0.1',
            port,
            path: '/v2/workspaces/100/tags',
            headers: { authorization: `Bearer ${K.wsAdmin}`, 'x-forwarded-for': ip },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? -1));
          },
        );
        req.setTimeout(15_000, () => req.destroy());
        req.on('error', () => resolve(-1));
      });
    };

    let admittedBefore = 0;
    for (let n = 0; n < SPENT_BEFORE; n++) if ((await one()) === 200) admittedBefore++;

    if (kind === 'stop') {
      await Promise.all(
        programs.map((child) => {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          return exited;
        }),
      );
      const rows = await db.query('SELECT used FROM month_counts').catch(() => null);
      return {
        kind,
        settle,
        checkpointMs,
        quota: QUOTA,
        admittedBefore,
        admittedAfter: 0,
        admitted: admittedBefore,
        checkpointBefore: rows === null ? null : Math.max(0, ...rows.map((r) => Number(r.used))),
        refusedAfter: 0,
        unavailableAfter: 0,
      };
    }

    // What PostgreSQL holds of the month once the programs checkpointed it; then three more of their
    // intervals, so each has read back what the other wrote (the programs run on the real clock).
    let checkpointBefore: number | null = null;
    const deadline = Date.now() + 10_000;
    for (; settle;) {
      try {
        const rows = await db.query('SELECT used FROM month_counts');
        checkpointBefore = rows.length ? Math.max(...rows.map((r) => Number(r.used))) : 0;
      } catch {
        checkpointBefore = null; // no month_counts table: nothing is checkpointed
        break;
      }
      if (checkpointBefore >= admittedBefore || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (settle) await new Promise((r) => setTimeout(r, 3 * checkpointMs));

    if (redis) {
      await redis.stop();
      await redis.start();
    } else if (group) {
      // The primary holds back the full resynchronisation's transfer: the restarted replica stays empty.
      await cli(group.primary.port, 'config', 'set', 'repl-diskless-sync', 'yes');
      await cli(group.primary.port, 'config', 'set', 'repl-diskless-sync-delay', '60');
      // Restarted without persistence: the file its first synchronisation left is removed too, so it
      // cannot resume from it (a partial resynchronisation) and must load the primary's whole data.
      const dir = (await cli(group.replica.port, 'config', 'get', 'dir')).trim().split('\n')[1];
      await group.replica.stop();
      rmSync(join(dir, 'dump.rdb'), { force: true });
      await group.replica.start();
      const until = Date.now() + 10_000;
      // The primary waits to start the transfer (wait_bgsave) while the replica holds nothing.
      while (!(await cli(group.primary.port, 'info', 'replication')).includes('state=wait_bgsave')) {
        if (Date.now() > until)
          throw new Error(
            `the replica did not start resynchronising: ${await cli(group.primary.port, 'info', 'replication')}`,
          );
        await new Promise((r) => setTimeout(r, 20));
      }
      await group.primary.stop();
      const promoted = Date.now() + 30_000;
      while ((await group.currentPrimaryPort()) !== group.replica.port) {
        if (Date.now() > promoted) throw new Error('the sentinels did not promote the replica');
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    let admittedAfter = 0;
    let refusedAfter = 0;
    let unavailableAfter = 0;
    const until = Date.now() + 60_000;
    while (admittedAfter + refusedAfter < RETRIES_AFTER) {
      if (Date.now() > until)
        throw new Error(`the programs did not use Redis again: ${outputs.map((o) => o()).join('\n')}`);
      const status = await one();
      if (status === 200) admittedAfter++;
      else if (status === 429) refusedAfter++;
      else {
        unavailableAfter++;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    return {
      kind,
      settle,
      checkpointMs,
      quota: QUOTA,
      admittedBefore,
      admittedAfter,
      admitted: admittedBefore + admittedAfter,
      checkpointBefore,
      refusedAfter,
      unavailableAfter,
    };
  } finally {
    for (const child of programs) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }
    }
    await redis?.stop();
    await group?.stop();
    await new Promise((r) => upstream.close(r));
  }
}

// Issue 36 items 1 and 2: what the open-mode fallback admits when Redis is lost, against the documented
// bound (docs/redis.md, "Bounded while Redis is away"; docs/limits.md). Two real gateway programs
// (`keygate gateway`, RATE_LIMIT_FAILURE_MODE=open) share one PostgreSQL schema and a Redis of this
// run's own; requests alternate between them, then Redis (or one Cluster primary) is killed:
//   minute-none   a key with a read budget of 20 a minute, its organization without a monthly quota:
//                 6 admitted, the redis-server killed, then each program until it refuses;
//   minute-quota  the same, the organization with a monthly quota far from spent;
//   month-spent   a monthly quota of 10, all 10 spent, the redis-server killed, then each program
//                 until it refuses;
//   cluster       three primaries with a replica each; one client address (budget 100 a minute) whose
//                 counter lives on a primary that holds neither the key's counter nor the
//                 organization's version: 40 admitted, that primary killed, requests one at a time
//                 through the failover until both programs are back on the promoted replica and the
//                 address is refused.
// Used by test/ops/fallback-bound.test.ts and test/ops/fallback-cluster.test.ts (one run each) and
// bench/diagnostics/fallback-bound.ts (several runs, the figures of docs/redis.md).
import { execFile, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { Db } from '../../src/db/index.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { IP_LIMIT } from '../../src/config/contract.js';
import { addressKey } from '../../src/http/address.js';
import { keySlot } from '../../src/limits/redis-cluster/slot.js';
import { seedWith, K } from '../fixtures/seed.js';
import { schemaUrl, spawnGatewayOn } from './gateway-program.js';
import { ownRedis, type OwnRedis } from './redis-server.js';
import { startReplicatedCluster, type ReplicatedCluster } from './cluster-replicas.js';
import { listenLocal } from './listen.js';

const run = promisify(execFile);

export type FallbackKind = 'minute-none' | 'minute-quota' | 'month-spent' | 'cluster';

export const PROGRAMS = 2;
/** The growth plan's read budget (config/plans.json), K.wsAdmin's bucket. */
const READ_BUDGET = 20;
const MONTH_QUOTA = 10;

export interface FallbackRun {
  kind: FallbackKind;
  /** The budget of the counter under test: the key's minute, the month, or the address's minute. */
  budget: number;
  admittedBefore: number;
  /** Admitted after the kill, per program (cluster: both together, through the failover). */
  admittedAfter: number[];
  admitted: number;
  /** Every request of the run fell in one minute (else the minute's counters started again). */
  oneMinute: boolean;
  /** Cluster: ms from the kill until the replica was promoted and both programs were back. */
  backAfterMs?: number;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  try {
    return (await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 })).stdout;
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The minute of `Date.now()`, and sleeps into the next minute when fewer than `needMs` are left of this one. */
async function roomInMinute(needMs: number): Promise<number> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await sleep(left + 200);
  return Math.floor(Date.now() / 60_000);
}

/** A client address of 10.48.x.y whose address counter's slot `on` accepts. */
function addressOn(on: (slot: number) => boolean): string {
  for (let n = 1; n < 60_000; n++) {
    const ip = `10.48.${n >> 8}.${n & 255}`;
    if (on(keySlot(`ip:${addressKey(ip)}`))) return ip;
  }
  throw new Error('no address on that node');
}

/** `db` is a migrated schema of this run's own (dropped by the caller); `pgUrl` the server's URL without a search path. */
export async function fallbackBound(kind: FallbackKind, db: Db, pgUrl: string): Promise<FallbackRun> {
  await applySeed(db, parseSeed(seedWith()));
  if (kind === 'minute-quota') await db.query('UPDATE organizations SET monthly_quota = 1000000 WHERE id = 1');
  if (kind === 'month-spent') await db.query('UPDATE organizations SET monthly_quota = $1 WHERE id = 1', [MONTH_QUOTA]);
  const upstream = http.createServer((req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end('{"data":[]}');
  });
  const upstreamPort = (await listenLocal(upstream)).port;
  let redis: OwnRedis | undefined;
  let cluster: ReplicatedCluster | undefined;
  const programs: ChildProcess[] = [];
  try {
    let redisEnv: Record<string, string>;
    if (kind === 'cluster') {
      cluster = await startReplicatedCluster(3_000);
      redisEnv = { REDIS_CLUSTER_NODES: cluster.nodes.join(',') };
    } else {
      redis = await ownRedis();
      redisEnv = { REDIS_URL: redis.url };
    }
    const prefix = `fb${randomBytes(4).toString('hex')}:`;
    const ports: number[] = [];
    const admins: number[] = [];
    for (let n = 0; n < PROGRAMS; n++) {
      const { child, port, admin, ready } = await spawnGatewayOn(schemaUrl(pgUrl, db.schema), {
        ...redisEnv,
        REDIS_KEY_PREFIX: prefix,
        RATE_LIMIT_FAILURE_MODE: 'open',
        UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
        // The cluster run's limit is the address's: the key's budget out of the way.
        PLANS_FILE: kind === 'cluster' ? 'bench/plans.json' : 'config/plans.json',
      });
      programs.push(child);
      await ready;
      ports.push(port);
      admins.push(admin);
    }
    // Each program beats into the live set once a second: after 2.5 s each counts both.
    await sleep(2_500);

    let seq = 0;
    const one = (program: number, ip = `10.36.${Math.floor(seq / 250)}.${(seq % 250) + 1}`): Promise<number> => {
      seq++;
      return new Promise((resolve) => {
        const req = http.get(
          {
            host: '127.0.0.1',
            port: ports[program],
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
    const degraded = async (program: number) => {
      const body = await new Promise<string>((resolve) => {
        http
          .get({ host: '127.0.0.1', port: admins[program], path: '/readyz' }, (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve(text));
          })
          .on('error', () => resolve(''));
      });
      return body.includes('"redis":"degraded"');
    };
    const untilEvery = async (want: boolean, ms: number) => {
      const deadline = Date.now() + ms;
      for (;;) {
        const states = await Promise.all(ports.map((_, n) => degraded(n)));
        if (states.every((d) => d === want)) return;
        if (Date.now() > deadline) throw new Error(`programs not ${want ? 'degraded' : 'back'} within ${ms} ms`);
        await sleep(50);
      }
    };

    if (kind !== 'cluster') {
      const budget = kind === 'month-spent' ? MONTH_QUOTA : READ_BUDGET;
      const minute = await roomInMinute(25_000);
      let admittedBefore = 0;
      for (let n = 0; n < (kind === 'month-spent' ? MONTH_QUOTA : 6); n++)
        if ((await one(n % PROGRAMS)) === 200) admittedBefore++;
      await redis!.stop();
      await untilEvery(true, 10_000);
      const admittedAfter: number[] = [];
      for (let p = 0; p < PROGRAMS; p++) {
        let here = 0;
        // Until it refuses five in a row (it admits its share at most).
        for (let refused = 0, n = 0; refused < 5 && n < budget + 10; n++) {
          if ((await one(p)) === 200) {
            here++;
            refused = 0;
          } else refused++;
        }
        admittedAfter.push(here);
      }
      const oneMinute = Math.floor(Date.now() / 60_000) === minute;
      const admitted = admittedBefore + admittedAfter.reduce((a, b) => a + b, 0);
      return { kind, budget, admittedBefore, admittedAfter, admitted, oneMinute };
    }

    // The cluster run: a victim holding neither the key's counter nor the organization's version.
    const c = cluster!;
    const owner = await c.slotOwners();
    const fixed = new Set([owner(keySlot('k:1000:read')), owner(keySlot('1')), owner(keySlot('m:1'))]);
    const victim = (await c.primaries()).find((port) => !fixed.has(port))!;
    const ip = addressOn((slot) => owner(slot) === victim);
    const minute = await roomInMinute(40_000);
    let admittedBefore = 0;
    for (let n = 0; n < 40; n++) if ((await one(n % PROGRAMS, ip)) === 200) admittedBefore++;
    // The replica has every count acknowledged so far: what is lost with the primary is not the test's.
    for (const deadline = Date.now() + 5_000; Date.now() < deadline; await sleep(20)) {
      const info = await cli(victim, 'info', 'replication');
      const offset = /master_repl_offset:(\d+)/.exec(info)?.[1];
      const replica = /slave0:.*offset=(\d+)/.exec(info)?.[1];
      if (offset !== undefined && offset === replica) break;
    }
    const killedAt = Date.now();
    c.kill(victim);
    let admittedAfter = 0;
    let backAt = 0;
    for (let n = 0, refusedAfterBack = 0; refusedAfterBack < 6; n++) {
      if (Date.now() - killedAt > 40_000)
        throw new Error('the programs were not back on the promoted replica within 40 s');
      const status = await one(n % PROGRAMS, ip);
      if (status === 200) admittedAfter++;
      if (!backAt) {
        const primaries = await c.primaries();
        const promoted = primaries.length === 3 && !primaries.includes(victim);
        if (promoted && !(await degraded(0)) && !(await degraded(1))) backAt = Date.now();
      } else if (status === 200) refusedAfterBack = 0;
      else refusedAfterBack++;
      await sleep(30);
    }
    const oneMinute = Math.floor(Date.now() / 60_000) === minute;
    return {
      kind,
      budget: IP_LIMIT,
      admittedBefore,
      admittedAfter: [admittedAfter],
      admitted: admittedBefore + admittedAfter,
      oneMinute,
      backAfterMs: backAt - killedAt,
    };
  } finally {
    await Promise.all(
      programs.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        return exited;
      }),
    );
    await redis?.stop();
    cluster?.stop();
    upstream.close();
  }
}

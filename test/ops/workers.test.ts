// WORKERS=2: the real gateway program on two processes sharing PORT (src/ops/cluster.ts), each with its
// own Redis connection. A burst from one key lets exactly the key's budget through, both workers serve,
// the primary's ADMIN_PORT reports for both, and SIGTERM drains every worker and exits 0
// (docs/decisions.md section 8). Without Redis the start is refused in one line naming WORKERS, exit code 2.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { freePort } from '../helpers/redis-server.js';
import { requestWhole } from '../helpers/program.js';
import { cliArgs } from '../helpers/cli-program.js';
import { seedWith, K } from '../fixtures/seed.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { mergeMetrics } from '../../src/ops/cluster.js';
import type { Db } from '../../src/db/index.js';
import { listenLocal } from '../helpers/listen.js';

// Separate processes can share only real servers: PostgreSQL and Redis.
const PG = process.env.DATABASE_URL;
const REDIS = process.env.REDIS_URL;
/** org 1's plan, growth: 20 reads a minute (config/plans.json). */
const READ_BUDGET = 20;

/** The TCP ports `pid` listens on (Linux: its descriptors matched with /proc/net/tcp*). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6'])
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // f[1] local address:port in hex, f[3] state (0A: LISTEN), f[9] inode.
      if (f[3] === '0A' && inodes.has(f[9])) ports.push(parseInt(f[1].split(':')[1], 16));
    }
  return ports;
}

describe('WORKERS settings', () => {
  it('is refused without REDIS_URL or REDIS_CLUSTER_NODES: one line naming WORKERS, exit code 2', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      WORKERS: '2',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test',
      GATEWAY_SECRET: 'test-gateway-secret-0123456789',
    };
    delete env.REDIS_URL;
    delete env.REDIS_CLUSTER_NODES;
    const r = spawnSync(process.execPath, [...(await cliArgs()), 'gateway'], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^keygate: setting WORKERS: 2 needs REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS/);
  });

  it("merges the workers' metrics with a worker label, each family once", () => {
    const page = (v: number) =>
      `# HELP x_total X.\n# TYPE x_total counter\nx_total{a="1"} ${v}\nx_total ${v + 1}\n# HELP h Histo.\n# TYPE h histogram\nh_bucket{le="+Inf"} 3\nh_sum 0.5\n`;
    expect(
      mergeMetrics([
        { worker: '1', text: page(1) },
        { worker: '2', text: page(5) },
      ]),
    ).toBe(
      '# HELP x_total X.\n# TYPE x_total counter\nx_total{worker="1",a="1"} 1\nx_total{worker="1"} 2\nx_total{worker="2",a="1"} 5\nx_total{worker="2"} 6\n' +
        '# HELP h Histo.\n# TYPE h histogram\nh_bucket{worker="1",le="+Inf"} 3\nh_sum{worker="1"} 0.5\nh_bucket{worker="2",le="+Inf"} 3\nh_sum{worker="2"} 0.5\n',
    );
  });
});

describe.runIf(Boolean(PG && REDIS))('WORKERS=2 (the gateway program)', () => {
  let db: Db & { drop(): Promise<void> };
  let upstream: http.Server;
  let upstreamDelayMs = 0;
  let child: ChildProcess;
  let out = '';
  let port: number;
  let admin: number;
  const prefix = `wk${randomBytes(4).toString('hex')}:`;

  beforeAll(async () => {
    db = await openTestDb();
    await applySeed(db, parseSeed(seedWith()));
    upstream = http.createServer((req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: { path: req.url } }));
      }, upstreamDelayMs);
    });
    const { url: upstreamUrl } = await listenLocal(upstream);
    const url = new URL(PG!);
    url.searchParams.set('options', `-c search_path=${db.schema}`);
    [port, admin] = [await freePort(), await freePort()];
    child = spawn(process.execPath, [...(await cliArgs()), 'gateway'], {
      env: {
        ...process.env,
        WORKERS: '2',
        DATABASE_URL: url.toString(),
        REDIS_URL: REDIS,
        REDIS_KEY_PREFIX: prefix,
        GATEWAY_SECRET: 'test-gateway-secret-0123456789',
        UPSTREAM_URL: upstreamUrl,
        PORT: String(port),
        ADMIN_PORT: String(admin),
        HOST: '127.0.0.1',
        TRUST_PROXY: '127.0.0.1',
        DRAIN_TIMEOUT_MS: '5000',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    const deadline = Date.now() + 60_000;
    while (
      (await fetch(`http://127.0.0.1:${admin}/readyz`).then(
        (r) => r.status,
        () => 0,
      )) !== 200
    ) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the workers did not start: ${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    await new Promise((r) => upstream?.close(r));
    await db?.drop();
  });

  /** One request on a connection of its own, so the primary hands the connections out in turn. */
  const get = (key: string, ip: string) =>
    requestWhole({
      host: '127.0.0.1',
      port,
      path: '/v2/workspaces/100/tags',
      agent: false,
      headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': ip },
    });

  /** keygate_requests_total by worker, from the primary's /metrics. */
  async function requestsByWorker(): Promise<Record<string, number>> {
    const text = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
    const by: Record<string, number> = {};
    for (const m of text.matchAll(/^keygate_requests_total\{worker="(\d+)",.*\} (\d+)$/gm))
      by[m[1]] = (by[m[1]] ?? 0) + Number(m[2]);
    return by;
  }

  it('a burst of one key over both workers lets exactly its budget through, and both workers serve', async () => {
    // Real time: start early in a minute so the burst shares one window.
    const sec = new Date().getUTCSeconds();
    if (sec > 45) await new Promise((r) => setTimeout(r, (61 - sec) * 1000));
    const burst = await Promise.all(
      Array.from({ length: READ_BUDGET + 15 }, (_, i) => get(K.editorPk, `10.30.${i >> 8}.${i & 255}`)),
    );
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(READ_BUDGET);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    const by = await requestsByWorker();
    expect(Object.keys(by).sort()).toEqual(['1', '2']);
    expect(by['1']).toBeGreaterThan(0);
    expect(by['2']).toBeGreaterThan(0);
    expect(by['1'] + by['2']).toBe(READ_BUDGET + 15);
    // Each worker logs its pid once it listens: two distinct processes, neither the primary.
    const pids = new Set(
      [...out.matchAll(/"pid":(\d+)[^\n]*keygate gateway worker listening/g)].map((m) => Number(m[1])),
    );
    expect(pids.size).toBe(2);
    expect(pids.has(child.pid!)).toBe(false);
  }, 90_000);

  interface Readiness {
    status: number;
    workers: { worker: number; pid: number | null }[];
  }
  /** The primary's /readyz: its status and each worker's pid. */
  async function readiness(): Promise<Readiness> {
    const res = await fetch(`http://127.0.0.1:${admin}/readyz`);
    return { status: res.status, ...((await res.json()) as Omit<Readiness, 'status'>) };
  }
  const pidOf = (r: Readiness, worker: number) => r.workers.find((w) => w.worker === worker)!.pid;
  /** Readiness once worker 2 serves again under a pid other than `victim`'s (or after 30 s). */
  async function untilReplaced(victim: number | null): Promise<Readiness> {
    for (const deadline = Date.now() + 30_000; ; await new Promise((t) => setTimeout(t, 100))) {
      const r = await readiness();
      if ((r.status === 200 && pidOf(r, 2) !== victim) || Date.now() > deadline) return r;
    }
  }

  it('a worker that crashes is restarted under the same worker id, and counted', async () => {
    const before = await readiness();
    const victim = pidOf(before, 2)!;
    process.kill(victim, 'SIGKILL');
    const after = await untilReplaced(victim);
    expect(pidOf(after, 2)).not.toBe(victim);
    expect(pidOf(after, 1)).toBe(pidOf(before, 1));
    const text = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
    expect(text).toContain('keygate_worker_restarts_total{worker="2"} 1\n');
    expect(text).toContain('keygate_worker_restarts_total{worker="1"} 0\n');
    expect((await get(K.wsAdmin, '10.32.0.1')).status).toBe(200);
  }, 60_000);

  it('a worker restarting while another process takes the port it was told to use still starts at once', async () => {
    const restarts = async () =>
      Number(
        /^keygate_worker_restarts_total\{worker="2"\} (\d+)$/m.exec(
          await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text(),
        )![1],
      );
    const restartsBefore = await restarts();
    const children = () =>
      new Set(
        readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number),
      );
    const before = children();
    const victim = pidOf(await readiness(), 2)!;
    process.kill(victim, 'SIGKILL');
    // The restarted worker, as soon as it is forked: the port it was told to listen on is taken
    // before it gets there, as any process on the machine may take a port the primary found free.
    let restarted = 0;
    for (
      const deadline = Date.now() + 30_000;
      !restarted && Date.now() < deadline;
      await new Promise((r) => setTimeout(r, 5))
    )
      restarted = [...children()].find((pid) => !before.has(pid)) ?? 0;
    expect(restarted).toBeGreaterThan(0);
    // Until the fork's exec, the child's environment is still the primary's: the worker's is the one
    // with its KEYGATE_WORKER_ID.
    let environ = '';
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 1))) {
      environ = `\0${readFileSync(`/proc/${restarted}/environ`, 'latin1')}`;
      if (environ.includes('\0KEYGATE_WORKER_ID=')) break;
    }
    expect(environ).toContain('\0KEYGATE_WORKER_ID=2\0');
    const told = /\0ADMIN_PORT=(\d+)/.exec(environ)?.[1];
    const squatter = net.createServer();
    if (told !== undefined && told !== '0')
      await new Promise<void>((resolve, reject) => {
        squatter.once('error', reject);
        squatter.listen({ port: Number(told), host: '127.0.0.1', exclusive: true }, resolve);
      });
    try {
      const pid = pidOf(await untilReplaced(victim), 2);
      // The first worker forked after the crash serves: it was not restarted again.
      expect(pid).toBe(restarted);
      expect(await restarts()).toBe(restartsBefore + 1);
      // Each worker's listeners are its own (its admin server's among them); the primary listens on
      // PORT and ADMIN_PORT only, and names no other port for anyone to take.
      expect(listeningPorts(child.pid!).sort()).toEqual([port, admin].sort());
      for (const worker of children()) expect(listeningPorts(worker)).toHaveLength(2);
    } finally {
      if (squatter.listening) await new Promise((r) => squatter.close(r));
    }
  }, 90_000);

  it('SIGTERM: readiness 503 at once, every worker finishes its in-flight requests, exit 0', async () => {
    upstreamDelayMs = 800;
    const inFlight = Array.from({ length: 6 }, (_, i) => get(K.wsAdmin, `10.31.0.${i}`));
    await new Promise((r) => setTimeout(r, 200));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    expect(
      await fetch(`http://127.0.0.1:${admin}/readyz`).then(
        (r) => r.status,
        () => 0,
      ),
    ).toBe(503);
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(answers.every((a) => a.complete)).toBe(true);
    expect(await exited).toBe(0);
  }, 60_000);
});

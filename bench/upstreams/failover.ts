// Failover under a steady load (issue 37): three upstream processes (test/helpers/upstream-fleet.ts)
// behind (a) keygate, the three as one service, and (b) a bare round-robin proxy with no health checks
// and no retries (./round-robin-proxy.mjs), both at once, on the same targets, the same paced load
// each. One target is killed (SIGKILL) mid-run and restarted later on its address. Reported: the
// failures each client saw per second, the totals by method, and keygate's time to eject the dead
// target and to re-admit it (from its log lines), beside when each proxy first sent to it again.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/upstreams/failover.ts
//
// Settings: FAILOVER_RATE (requests/s to each proxy, 150), FAILOVER_POST_SHARE (0.2 of them POSTs),
// FAILOVER_SECONDS (60: past the default 30 s passive ejection that follows the kill),
// FAILOVER_KILL_AT (10), FAILOVER_RESTART_AT (25), FAILOVER_DELAY_MS (each target's answer delay, 5),
// FAILOVER_PROBE (on: an active probe every second, its other settings the defaults; off: passive
// health alone), FAILOVER_MIN_RETRIES (the retry budget's floor, `retries.minConcurrent`; default the
// service's default, 3). Without the probe the restarted target waits for its passive ejection's end
// (30 s at the defaults); with it, the probe's passes end the ejection. The JSON goes to
// bench/results/failover-<time>.json.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { freshSchema } from '../diagnostics/stack.js';
import { freePort, waitForPort } from '../procs.js';
import { cliArgs } from '../../test/helpers/cli-program.js';
import { startFleet, writeRoutesFile, type Upstream } from '../../test/helpers/upstream-fleet.js';
import type { ServiceFile } from '../../src/config/services.js';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const env = process.env;
const RATE = Number(env.FAILOVER_RATE ?? 150);
const POST_SHARE = Number(env.FAILOVER_POST_SHARE ?? 0.2);
const SECONDS = Number(env.FAILOVER_SECONDS ?? 60);
const KILL_AT = Number(env.FAILOVER_KILL_AT ?? 10);
const RESTART_AT = Number(env.FAILOVER_RESTART_AT ?? 25);
const DELAY_MS = Number(env.FAILOVER_DELAY_MS ?? 5);
const PROBE = env.FAILOVER_PROBE !== 'off';
const MIN_RETRIES = env.FAILOVER_MIN_RETRIES ? Number(env.FAILOVER_MIN_RETRIES) : undefined;
const KEY = 'svc_ws_' + randomBytes(20).toString('hex').slice(0, 32);
const WS = 100;
const PATH = `/v2/workspaces/${WS}/tags`;

type Via = 'keygate' | 'bare';
interface Sample {
  via: Via;
  method: 'GET' | 'POST';
  /** Seconds since the load began, when it was sent. */
  at: number;
  status: number;
  ms: number;
}

const seed = {
  organizations: [{ id: 1, name: 'Failover', plan: 'growth', apiAccess: true, paused: false }],
  users: [{ id: 10, organizationId: 1, email: 'owner@failover.test', orgRole: 'OWNER' }],
  workspaces: [{ id: WS, organizationId: 1, name: 'Failover' }],
  memberships: [{ workspaceId: WS, userId: 10, role: 'OWNER' }],
  apiKeys: [
    { id: 1000, secret: KEY, name: 'failover', workspaceId: WS, role: 'ADMIN', scopes: ['tags:read', 'tags:write'] },
  ],
};

/** The three targets as keygate's one service: defaults throughout, a probe each second unless FAILOVER_PROBE=off. */
function service(targets: Upstream[]): ServiceFile {
  return {
    targets: targets.map((t) => t.url),
    ...(PROBE ? { probe: { path: '/healthz', intervalMs: 1_000 } } : {}),
    ...(MIN_RETRIES === undefined ? {} : { retries: { minConcurrent: MIN_RETRIES } }),
  };
}

let ipSeq = 0;
/** One request through `port`: its status (0 for a broken connection), never a rejection. */
function send(agent: http.Agent, port: number, method: 'GET' | 'POST', id: string): Promise<number> {
  const i = ipSeq++ & 0xffff;
  const body = method === 'POST' ? JSON.stringify({ name: id }) : undefined;
  return new Promise((done) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: PATH,
        agent,
        timeout: 30_000,
        headers: {
          authorization: `Bearer ${KEY}`,
          'x-forwarded-for': `10.7.${i >> 8}.${i & 255}`,
          'x-request-id': id,
          ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? 0));
        res.on('error', () => done(0));
      },
    );
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', () => done(0));
    req.end(body);
  });
}

/** What the client itself lost: sends skipped because its own loop fell behind, and its worst stall. */
const client = { skipped: 0, maxLagMs: 0 };

/**
 * RATE requests a second to each proxy for `seconds`, paced in 10 ms steps (an open loop: a slow answer
 * does not slow the sending), `events` run at their second on their own timers. A client that falls
 * more than a step behind skips the sends it missed rather than burst them (counted in `client`).
 * Each proxy gets at most 128 connections: the keep-alive pools of a real client, not one per request.
 * Resolves once every answer is in.
 */
async function paced(
  proxies: Record<Via, number>,
  seconds: number,
  events: [number, () => Promise<void>][],
  prefix: string,
): Promise<Sample[]> {
  const agents = {
    keygate: new http.Agent({ keepAlive: true, maxSockets: 128 }),
    bare: new http.Agent({ keepAlive: true, maxSockets: 128 }),
  };
  const samples: Sample[] = [];
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  const timers = events.map(([at, run]) => setTimeout(() => pending.push(run()), at * 1000));
  let sent = 0;
  let last = t0;
  for (;;) {
    const now = performance.now();
    client.maxLagMs = Math.max(client.maxLagMs, now - last - 10);
    last = now;
    const elapsed = (now - t0) / 1000;
    if (elapsed >= seconds) break;
    const due = Math.floor(elapsed * RATE);
    const floor = due - Math.ceil(RATE / 100);
    if (sent < floor) {
      client.skipped += floor - sent;
      sent = floor;
    }
    for (; sent < due; sent++) {
      const method = (sent * 7919) % 100 < POST_SHARE * 100 ? 'POST' : 'GET';
      for (const via of ['keygate', 'bare'] as const) {
        const at = (performance.now() - t0) / 1000;
        pending.push(
          send(agents[via], proxies[via], method, `${prefix}-${via}-${sent}`).then((status) => {
            samples.push({ via, method, at, status, ms: (performance.now() - t0) / 1000 - at });
          }),
        );
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  for (const t of timers) clearTimeout(t);
  await Promise.all(pending);
  agents.keygate.destroy();
  agents.bare.destroy();
  return samples;
}

interface HealthEvent {
  at: number;
  what: 'ejected' | 'readmitted';
  line: string;
}

/** keygate's ejection and return lines for `target` (host:port), by their `time` (epoch ms). */
function healthEvents(log: string, target: string): HealthEvent[] {
  const out: HealthEvent[] = [];
  for (const line of log.split('\n')) {
    if (!line.includes(target)) continue;
    let rec: { time?: number; msg?: string };
    try {
      rec = JSON.parse(line) as typeof rec;
    } catch {
      continue;
    }
    // src/gateway/upstreams/registry.ts: 'upstream target ejected', 'upstream target admitted again'.
    const msg = rec.msg ?? '';
    const what = /admitted again|re-?admit/i.test(msg) ? 'readmitted' : /eject/i.test(msg) ? 'ejected' : null;
    if (what && rec.time) out.push({ at: rec.time, what, line: line.slice(0, 300) });
  }
  return out;
}

const failed = (s: Sample) => s.status === 0 || s.status >= 500;

function report(samples: Sample[], marks: { kill: number; restart: number }, extra: Record<string, string>) {
  const perSecond = new Map<number, Record<Via, number>>();
  for (let s = 0; s < SECONDS; s++) perSecond.set(s, { keygate: 0, bare: 0 });
  for (const s of samples.filter(failed)) perSecond.get(Math.floor(s.at))![s.via]++;
  console.log(`\nclient-visible failures (5xx or broken connection) per second, ${RATE} req/s to each proxy`);
  console.log('| second | event | keygate | bare proxy |\n|--:|:--|--:|--:|');
  for (const [s, n] of perSecond) {
    const event = s === Math.floor(marks.kill) ? 'target killed' : s === Math.floor(marks.restart) ? 'restarted' : '';
    if (n.keygate + n.bare > 0 || event) console.log(`| ${s} | ${event} | ${n.keygate} | ${n.bare} |`);
  }
  console.log(
    '\n| proxy | GET sent | GET failed | POST sent | POST failed | statuses of the failures |\n|:--|--:|--:|--:|--:|:--|',
  );
  for (const via of ['keygate', 'bare'] as const) {
    const mine = samples.filter((s) => s.via === via);
    const of = (m: string) => mine.filter((s) => s.method === m);
    const statuses: Record<string, number> = {};
    for (const s of mine.filter(failed)) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
    console.log(
      `| ${via} | ${of('GET').length} | ${of('GET').filter(failed).length} | ${of('POST').length} | ${of('POST').filter(failed).length} | ${JSON.stringify(statuses)} |`,
    );
  }
  console.log('');
  for (const [k, v] of Object.entries(extra)) console.log(`${k}: ${v}`);
}

/** When each proxy first sent a request to `victim` after it listened again, in ms after that. */
function firstAfter(victim: Upstream, restartEpoch: number, prefix: string): Record<Via, string> {
  const first = (via: Via) => {
    const r = victim.received().find((x) => x.at >= restartEpoch && x.requestId.startsWith(`${prefix}-${via}-`));
    return r ? `${r.at - restartEpoch} ms` : 'never';
  };
  return { keygate: first('keygate'), bare: first('bare') };
}

async function main() {
  if (!env.DATABASE_URL) throw new Error('set DATABASE_URL (keygate reads its key from PostgreSQL)');
  const procs: ChildProcess[] = [];
  const fleet = await startFleet(3, { delayMs: DELAY_MS });
  const schema = await freshSchema(env.DATABASE_URL, 'failover');
  const work = mkdtempSync(join(tmpdir(), 'failover-'));
  const logFile = join(work, 'keygate.log');
  try {
    writeFileSync(join(work, 'seed.json'), JSON.stringify(seed));
    writeRoutesFile(join(work, 'routes.json'), { app: service(fleet.targets) }, () => 'app');
    const [port, admin] = [await freePort(), await freePort()];
    const out = openSync(logFile, 'w');
    procs.push(
      spawn(process.execPath, [...(await cliArgs()), 'gateway'], {
        env: {
          PATH: env.PATH ?? '',
          HOME: env.HOME ?? tmpdir(),
          NODE_ENV: 'production',
          DATABASE_URL: schema.url.toString(),
          SEED_FILE: join(work, 'seed.json'),
          ROUTES_FILE: join(work, 'routes.json'),
          PLANS_FILE: join(ROOT, 'bench', 'plans.json'),
          UPSTREAM_URL: fleet.targets[0].url,
          GATEWAY_SECRET: randomBytes(32).toString('hex'),
          HOST: '127.0.0.1',
          PORT: String(port),
          ADMIN_PORT: String(admin),
          TRUST_PROXY: '127.0.0.1',
          ACCESS_LOG: 'off',
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', out, out],
      }),
    );
    const bare = fork(join(ROOT, 'bench', 'upstreams', 'round-robin-proxy.mjs'), [], {
      env: { ...env, PORT: String(await freePort()), TARGETS: fleet.targets.map((t) => t.url).join(',') },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    procs.push(bare);
    const barePort = await new Promise<number>((r) =>
      bare.once('message', (m: { listening: number }) => r(m.listening)),
    );
    await waitForPort(port, 120_000).catch((err: Error) => {
      throw new Error(`keygate did not start: ${err.message}\n${readFileSync(logFile, 'utf8')}`);
    });
    const proxies = { keygate: port, bare: barePort };
    const warm = await paced(proxies, 2, [], 'warm');
    console.log(`warm-up: ${warm.filter(failed).length} failures of ${warm.length}`);
    Object.assign(client, { skipped: 0, maxLagMs: 0 });

    const victim = fleet.targets[1];
    const marks = { kill: 0, restart: 0, killEpoch: 0, restartEpoch: 0 };
    const t0 = performance.now();
    const samples = await paced(
      proxies,
      SECONDS,
      [
        [
          KILL_AT,
          async () => {
            marks.kill = (performance.now() - t0) / 1000;
            marks.killEpoch = Date.now();
            await victim.kill();
          },
        ],
        [
          RESTART_AT,
          async () => {
            marks.restart = (performance.now() - t0) / 1000;
            await victim.restart();
            // From when it listens again: the start of a node process is not the proxies' doing.
            marks.restartEpoch = Date.now();
          },
        ],
      ],
      'run',
    );
    const events = healthEvents(readFileSync(logFile, 'utf8'), `${victim.host}:${victim.port}`);
    const series = (await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text())
      .split('\n')
      .filter((l) => /^keygate_upstream_(retr|attempt|ejec|readm)/.test(l));
    const ejected = events.find((e) => e.what === 'ejected' && e.at >= marks.killEpoch);
    const readmitted = events.find((e) => e.what === 'readmitted' && e.at >= marks.restartEpoch);
    const firsts = firstAfter(victim, marks.restartEpoch, 'run');
    const extra = {
      'keygate: ejected after the kill': ejected ? `${ejected.at - marks.killEpoch} ms` : 'no log line',
      'keygate: re-admitted after the target listened again': readmitted
        ? `${readmitted.at - marks.restartEpoch} ms`
        : 'no log line',
      'keygate: first request on the restarted target': firsts.keygate,
      'bare proxy: first request on the restarted target': firsts.bare,
      'keygate health log lines for the target': String(events.length),
      'client: sends skipped (its own loop behind), worst stall': `${client.skipped}, ${Math.round(client.maxLagMs)} ms`,
      settings: `rate ${RATE}/s per proxy, POST share ${POST_SHARE}, ${SECONDS} s, kill at ${KILL_AT} s, restart at ${RESTART_AT} s, target delay ${DELAY_MS} ms, probe ${PROBE ? 'on' : 'off'}, retry budget floor ${MIN_RETRIES ?? 'default'}`,
    };
    report(samples, marks, extra);
    console.log(`\nkeygate's series:\n${series.join('\n')}`);
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    const json = join(ROOT, 'bench', 'results', `failover-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(json, JSON.stringify({ extra, marks, events, series, samples }));
    console.log(`JSON: ${json}; keygate's log: ${logFile}`);
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => (p.exitCode === null ? new Promise((r) => p.once('exit', r)) : null)));
    await fleet.close();
    await schema.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});

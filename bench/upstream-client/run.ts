// UPSTREAM_CLIENT=lean against undici: the CPU per request of a forwarding process (node:http in front,
// keygate's forwarder, src/gateway/upstream-client.ts, over either client's pools) in front of the
// trivial upstream (bench/peers/upstream.mjs), in the same run. Other sessions share the machine, so
// the figure is CPU time (process.cpuUsage of the forwarding process, user + system) over the answers
// it forwarded, not throughput. Each client runs in PROCS processes of its own (between two processes
// of one build the figure differs by 10 to 15 %: bench/hop-stats.ts), and every round measures every
// process once, in an order rotated each round, so drift on the machine meets both clients alike. The
// load is a raw keep-alive client in this process (pre-serialised requests with the fields the gateway
// sends upstream), far cheaper than autocannon, so the machine is spent on what is measured.
//
//   npx tsx bench/upstream-client/run.ts
// Env: ROUNDS (6), WINDOW_S (4 seconds a measurement), WARMUP_S (3), PROCS (2 a client),
// CONNECTIONS (32 from the load client to each forwarding process).
//
//   MODE=client npx tsx bench/upstream-client/run.ts
// The clients alone, in one process: windows of REQUESTS (50,000) GET requests over 50 connections
// through an undici Pool's dispatch and through the lean pool's, alternating for ROUNDS, each answer's
// fields decoded as the forwarder decodes them (../../src/gateway/response-head.ts); this process's
// CPU per request. One process for both, so both meet the same JIT and heap.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Dispatcher } from 'undici';
import Pool from 'undici/lib/dispatcher/pool.js';
import { createForwarder } from '../../src/gateway/upstream-client.js';
import { copyResponseHeaders } from '../../src/gateway/response-head.js';
import { LeanPool } from '../../src/gateway/upstreams/lean-pool.js';
import { median } from '../hop-stats.js';

type Client = 'undici' | 'lean';
const CLIENTS: Client[] = ['undici', 'lean'];
const PATH = '/v2/workspaces/100/tags';
// The fields keygate sends upstream for the bench's request, values of the same lengths (as
// bench/diagnostics/upstream-client.mjs sends them), as the flat list the forwarder takes.
const FIELDS = Object.entries({
  'user-agent': 'autocannon',
  accept: '*/*',
  'x-forwarded-for': '10.0.1.2, 127.0.0.1',
  'x-keygate-identity': 'e'.repeat(330),
  'x-keygate-signature': `t=1764230000,v1=${'0'.repeat(64)}`,
}).flat();

interface Snap {
  n: number;
  cpu: number;
}

/** A forwarding process: node:http in front of createForwarder, counting the answers it completed. */
async function hop(client: Client, upstream: string): Promise<void> {
  const forwarder = createForwarder({ upstream, timeoutMs: 30_000, maxSockets: 256, client });
  let n = 0;
  let id = 0;
  const server = http.createServer((req, res) => {
    // A fresh field list each request, as the gateway builds one (src/gateway/forward-authorized.ts).
    const headers: string[] = ['host', req.headers.host ?? ''];
    for (let i = 0; i < FIELDS.length; i++) headers.push(FIELDS[i]);
    headers.push('x-request-id', String(++id));
    forwarder.forward(
      { method: req.method!, target: req.url!, headers, body: null, head: ['x-request-id', String(id)] },
      res,
      (kind) => res.writeHead(kind === 'gateway_timeout' ? 504 : 502).end(kind),
      () => n++,
    );
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('message', (m: string) => {
    if (m === 'snap') {
      const c = process.cpuUsage();
      process.send!({ n, cpu: c.user + c.system } satisfies Snap);
    } else if (m === 'stop') {
      void forwarder.close().then(() => process.exit(0));
    }
  });
}

/** A raw keep-alive load: `connections` sockets, each sending the next request when an answer ends. */
function load(port: number, connections: number) {
  const head = `GET ${PATH} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n${pairs()}\r\n`;
  let done = 0;
  let failed = 0;
  let running = true;
  const sockets: net.Socket[] = [];
  for (let c = 0; c < connections; c++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    sockets.push(socket);
    let pending: Buffer | null = null;
    const send = () => {
      if (running) socket.write(head, 'latin1');
    };
    socket.on('connect', send);
    socket.on('error', () => {});
    socket.on('data', (data: Buffer) => {
      pending = pending === null ? data : Buffer.concat([pending, data]);
      // Every answer here carries Content-Length (the upstream's, relayed), so framing is that simple.
      for (;;) {
        const end: number = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const headText = pending.toString('latin1', 0, end);
        const m = /\r\ncontent-length: *(\d+)/i.exec(headText);
        const length = m === null ? 0 : Number(m[1]);
        if (pending.length < end + 4 + length) return;
        if (!headText.startsWith('HTTP/1.1 200')) failed++;
        done++;
        pending = pending.length === end + 4 + length ? null : pending.subarray(end + 4 + length);
        send();
        if (pending === null) return;
      }
    });
  }
  return {
    counts: () => ({ done, failed }),
    stop: () => {
      running = false;
      for (const s of sockets) s.destroy();
    },
  };
}

function pairs(): string {
  let s = '';
  for (let i = 0; i < FIELDS.length; i += 2) s += `${FIELDS[i]}: ${FIELDS[i + 1]}\r\n`;
  return s;
}

interface Proc {
  client: Client;
  index: number;
  child: ChildProcess;
  port: number;
  snap(): Promise<Snap>;
}

async function startHop(client: Client, index: number, upstream: string): Promise<Proc> {
  const child = fork(fileURLToPath(import.meta.url), ['hop', client, upstream], { execArgv: ['--import', 'tsx'] });
  const [{ port }] = (await once(child, 'message')) as [{ port: number }];
  const snap = () =>
    new Promise<Snap>((resolve) => {
      child.once('message', (m: Snap) => resolve(m));
      child.send('snap');
    });
  return { client, index, child, port, snap };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The forwarding process's CPU µs per answer under the load for `seconds`. */
async function measure(p: Proc, seconds: number, connections: number): Promise<number> {
  const l = load(p.port, connections);
  await sleep(300); // connections open, the process past its first requests
  const a = await p.snap();
  await sleep(seconds * 1000);
  const b = await p.snap();
  l.stop();
  if (l.counts().failed > 0) throw new Error(`${p.client} ${p.index}: ${l.counts().failed} answers not 200`);
  return (b.cpu - a.cpu) / (b.n - a.n);
}

/** `total` requests through `pool`, 50 at a time; this process's CPU µs per request. */
function clientWindow(pool: Pick<Dispatcher, 'dispatch'>, total: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let started = 0;
    let done = 0;
    const cpu0 = process.cpuUsage();
    const next = () => {
      if (started >= total) return;
      started++;
      const headers: string[] = ['host', '127.0.0.1'];
      for (let i = 0; i < FIELDS.length; i++) headers.push(FIELDS[i]);
      pool.dispatch(
        { path: PATH, method: 'GET', headers, body: null },
        {
          onConnect() {},
          onHeaders(status, raw) {
            copyResponseHeaders(raw, status, [], false);
            return true;
          },
          onData: () => true,
          onComplete() {
            if (++done < total) return next();
            const c = process.cpuUsage(cpu0);
            resolve((c.user + c.system) / total);
          },
          onError: reject,
        },
      );
    };
    for (let i = 0; i < 50; i++) next();
  });
}

async function clients(upstream: string): Promise<void> {
  const rounds = Number(process.env.ROUNDS ?? 6);
  const requests = Number(process.env.REQUESTS ?? 50_000);
  const pools = {
    undici: new Pool(upstream, {
      connections: 64,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: 0,
      bodyTimeout: 0,
    }),
    lean: new LeanPool(upstream, { connections: 64, connectTimeout: 10_000, keepAliveTimeout: 30_000 }),
  };
  for (const c of CLIENTS) await clientWindow(pools[c], requests);
  const figures: Record<Client, number[]> = { undici: [], lean: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? CLIENTS : [...CLIENTS].reverse();
    for (const c of order) figures[c].push(await clientWindow(pools[c], requests));
    console.log(
      `round ${r + 1}: undici ${figures.undici[r].toFixed(2)}, lean ${figures.lean[r].toFixed(2)} µs/request`,
    );
  }
  const u = median(figures.undici);
  const l = median(figures.lean);
  console.log(
    `clients alone, median CPU per request: undici ${u.toFixed(2)} µs, lean ${l.toFixed(2)} µs; lean/undici ${(l / u).toFixed(3)} (${rounds} rounds of ${requests})`,
  );
  await Promise.all([pools.undici.destroy(), pools.lean.destroy()]);
}

async function main(): Promise<void> {
  const rounds = Number(process.env.ROUNDS ?? 6);
  const windowS = Number(process.env.WINDOW_S ?? 4);
  const warmupS = Number(process.env.WARMUP_S ?? 3);
  const procs = Number(process.env.PROCS ?? 2);
  const connections = Number(process.env.CONNECTIONS ?? 32);

  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const upstreamPort = (probe.address() as AddressInfo).port;
  probe.close();
  const upstreamProc = spawn(process.execPath, [fileURLToPath(new URL('../peers/upstream.mjs', import.meta.url))], {
    env: { ...process.env, PORT: String(upstreamPort) },
    stdio: 'inherit',
  });
  const upstream = `http://127.0.0.1:${upstreamPort}`;
  const all: Proc[] = [];
  try {
    for (let i = 0; i < 50; i++) {
      const up = await new Promise<boolean>((resolve) =>
        net
          .connect(upstreamPort, '127.0.0.1')
          .on('connect', function (this: net.Socket) {
            this.destroy();
            resolve(true);
          })
          .on('error', () => resolve(false)),
      );
      if (up) break;
      await sleep(100);
    }
    if (process.env.MODE === 'client') return await clients(upstream);
    for (let i = 1; i <= procs; i++) for (const c of CLIENTS) all.push(await startHop(c, i, upstream));
    for (const p of all) await measure(p, warmupS, connections);
    const figures: Record<Client, number[]> = { undici: [], lean: [] };
    const perProc = new Map<Proc, number[]>();
    for (let r = 0; r < rounds; r++) {
      const order = all.map((_, i) => all[(i + r) % all.length]);
      const line: string[] = [];
      for (const p of order) {
        const us = await measure(p, windowS, connections);
        figures[p.client].push(us);
        perProc.set(p, [...(perProc.get(p) ?? []), us]);
        line.push(`${p.client}#${p.index} ${us.toFixed(1)}`);
      }
      console.log(`round ${r + 1}: ${line.join(', ')} µs/request`);
    }
    for (const p of all) console.log(`${p.client}#${p.index}: median ${median(perProc.get(p)!).toFixed(1)} µs`);
    const u = median(figures.undici);
    const l = median(figures.lean);
    console.log(
      `median CPU per request: undici ${u.toFixed(1)} µs, lean ${l.toFixed(1)} µs; lean/undici ${(l / u).toFixed(3)} ` +
        `(${rounds} rounds x ${procs} processes a client, ${windowS} s windows, ${connections} connections)`,
    );
  } finally {
    for (const p of all) p.child.send('stop');
    await Promise.all(all.map((p) => once(p.child, 'exit')));
    upstreamProc.kill();
  }
}

if (process.argv[2] === 'hop') void hop(process.argv[3] as Client, process.argv[4]);
else await main();

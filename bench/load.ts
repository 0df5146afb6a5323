// The load generator: autocannon's programmatic API with a request generator (setupRequest) that
// builds every request's headers (rotating client IPs and, for scenario 4, keys). Latency is recorded
// from autocannon's per-response event in fractional milliseconds for every response, whatever its
// status: autocannon's own histogram keeps whole milliseconds of 2xx responses only, too coarse for a
// 1.5 ms target and blind to the 429 scenario.
import autocannon, { type Instance } from 'autocannon';
import { connect, type Socket } from 'node:net';

export interface LoadSpec {
  url: string;
  path: string;
  connections: number;
  /** Seconds; or `amount` requests. */
  duration?: number;
  amount?: number;
  /** A fixed offered load (requests per second over all connections) instead of as fast as possible. */
  rate?: number;
  /** Called for every request: the headers to send. */
  headers: () => Record<string, string>;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  /** Connection errors, timeouts included. */
  errors: number;
  non2xx: number;
  statuses: Record<string, number>;
}

class Samples {
  private a = new Float64Array(1 << 16);
  n = 0;
  push(v: number) {
    if (this.n === this.a.length) {
      const b = new Float64Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = v;
  }
  sorted(): Float64Array {
    return this.a.slice(0, this.n).sort();
  }
}

const pct = (s: Float64Array, p: number) =>
  s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];

/** Client IPs 10.0.0.0/16 in rotation (the IP layer allows 100 a minute each; 65,536 of them keep every IP far below). */
let ipCounter = Math.floor(Math.random() * 65_536);
export function nextIp(): string {
  const i = ipCounter++ & 0xffff;
  return `10.0.${i >> 8}.${i & 255}`;
}

/** Run one or several loads at once (scenario 6 loads two gateways); the results are merged. */
export async function runLoad(specs: LoadSpec[]): Promise<LoadResult> {
  const samples = new Samples();
  const statuses: Record<string, number> = {};
  const started = performance.now();
  const instances: Instance[] = specs.map((s) => {
    const inst = autocannon({
      url: s.url,
      connections: s.connections,
      ...(s.amount !== undefined ? { amount: s.amount } : { duration: s.duration ?? 1 }),
      timeout: 10,
      ...(s.rate !== undefined ? { overallRate: s.rate } : {}),
      requests: [
        {
          method: 'GET',
          path: s.path,
          setupRequest: (req) => {
            req.headers = s.headers();
            return req;
          },
        },
      ],
    });
    inst.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      samples.push(ms);
      statuses[status] = (statuses[status] ?? 0) + 1;
    });
    return inst;
  });
  const results = await Promise.all(instances);
  const seconds = (performance.now() - started) / 1000;
  const sorted = samples.sorted();
  let sum = 0;
  for (const v of sorted) sum += v;
  const non2xx = Object.entries(statuses).reduce((n, [code, c]) => (code.startsWith('2') ? n : n + c), 0);
  // autocannon's duration is the configured one; the rate is over what was actually counted.
  const configured = Math.max(...specs.map((s) => s.duration ?? 0));
  const over = configured > 0 ? configured : seconds;
  return {
    requests: samples.n,
    seconds: over,
    rps: samples.n / over,
    p50: pct(sorted, 50),
    p90: pct(sorted, 90),
    p99: pct(sorted, 99),
    mean: samples.n ? sum / samples.n : 0,
    errors: results.reduce((n, r) => n + r.errors, 0),
    non2xx,
    statuses,
  };
}

// ---------------------------------------------------------------- runPaced: open-loop, evenly paced load
// Why not `runLoad` with a rate: autocannon's overallRate is a per-connection quota per second. At the
// start of every second all connections send back to back until their quota is used, then sit idle, so
// "half the throughput" is saturation for half of each second and silence for the rest: p50 came out
// near 5 ms on loopback, the time a burst takes to drain, not the latency of a request at a steady load.
//
// runPaced works as wrk2 does: request i has an intended send time t0 + i/R, evenly spaced over the whole
// run, and goes out over a fixed set of keep-alive connections (raw node:net sockets, a prebuilt request
// head, a minimal response parser: Content-Length and chunked bodies). When no connection is free at its
// intended time the request waits in line. Its latency runs from its intended time to the end of its
// response, so a stall of the server delays every request behind it and they all count (no coordinated
// omission). The schedule is driven by a timer and by every response: each wake-up sends every request
// that is due. Node's timers have a granularity of about a millisecond; a timer wake-up also sends what is
// due within the next PACE_EARLY_MS, and a request sent before its intended time counts from when it was
// sent, so the timer's granularity is not charged to the server either way.
export interface PacedSpec {
  url: string;
  path: string;
  /** Requests per second, evenly spaced over the run. */
  rate: number;
  /** Seconds of schedule: rate × duration requests. */
  duration: number;
  /** Keep-alive connections (50). */
  connections?: number;
  /** Seconds a request may take before it counts as an error and its connection is replaced (10). */
  timeout?: number;
  /** Called for every request: the headers to send. */
  headers: () => Record<string, string>;
  /** Called for every response: its latency origin (performance.now() ms) and latency (ms); for diagnostics. */
  onSample?: (origin: number, ms: number) => void;
}

const PACE_EARLY_MS = 0.5;
const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
const enum St {
  Head,
  Body,
  ChunkSize,
  ChunkData,
  Trailer,
  UntilClose,
}

interface Conn {
  sock: Socket;
  alive: boolean;
  /** A request is in flight. */
  busy: boolean;
  /** Latency origin of the request in flight: its intended time, or when it was sent if that was earlier. */
  origin: number;
  sentAt: number;
  /** The server said Connection: close, or the body runs to the end of the connection. */
  closing: boolean;
  st: St;
  remaining: number;
  status: number;
  /** Bytes of an incomplete head or chunk-size line. */
  pending: Buffer | null;
}

/** An open-loop load at an even rate (see above). Returns what runLoad returns. */
export function runPaced(spec: PacedSpec): Promise<LoadResult> {
  const u = new URL(spec.url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = Number(u.port || 80);
  const nConns = Math.max(1, spec.connections ?? 50);
  const timeoutMs = (spec.timeout ?? 10) * 1000;
  const total = Math.max(0, Math.round(spec.rate * spec.duration));
  const interval = 1000 / spec.rate;
  const prefix = `GET ${spec.path} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: keep-alive\r\n`;

  const samples = new Samples();
  const statuses: Record<string, number> = {};
  let errors = 0;
  let next = 0; // index of the next request to send
  let inFlight = 0;
  let t0 = 0;
  let started = false;
  let finished = false;
  let timer: NodeJS.Timeout | null = null;
  let lastSweep = 0;
  let settle!: (r: LoadResult) => void;
  const done = new Promise<LoadResult>((r) => (settle = r));

  // Free connections, first in first out, so the load spreads over all of them as wrk2's does.
  const ring: (Conn | undefined)[] = new Array(nConns + 1);
  let rh = 0;
  let rt = 0;
  let nFree = 0;
  const release = (c: Conn) => {
    ring[rt] = c;
    rt = (rt + 1) % ring.length;
    nFree++;
  };
  const take = (): Conn | undefined => {
    while (nFree > 0) {
      const c = ring[rh]!;
      ring[rh] = undefined;
      rh = (rh + 1) % ring.length;
      nFree--;
      if (c.alive && !c.busy && !c.closing) return c;
    }
    return undefined;
  };
  const conns = new Set<Conn>();

  const complete = (c: Conn) => {
    {
      const ms = performance.now() - c.origin;
      samples.push(ms);
      spec.onSample?.(c.origin, ms);
    }
    statuses[c.status] = (statuses[c.status] ?? 0) + 1;
    c.busy = false;
    inFlight--;
    c.st = St.Head;
    if (c.closing) c.sock.destroy();
    else release(c);
  };

  /** Parse what the server sent; at most one response is expected at a time. */
  const feed = (c: Conn, chunk: Buffer) => {
    let b = chunk;
    if (c.pending) {
      b = Buffer.concat([c.pending, chunk]);
      c.pending = null;
    }
    let i = 0;
    const n = b.length;
    while (i < n) {
      if (!c.busy) return; // bytes nobody asked for: ignored
      switch (c.st) {
        case St.Head: {
          const e = b.indexOf(HEAD_END, i);
          if (e < 0) {
            c.pending = b.subarray(i);
            return;
          }
          const head = b.toString('latin1', i, e);
          i = e + 4;
          c.status = Number(head.slice(9, 12));
          if (c.status >= 100 && c.status < 200) continue; // 1xx: the real head follows
          const lower = head.toLowerCase();
          if (/\r\nconnection:[ \t]*close/.test(lower)) c.closing = true;
          const te = /\r\ntransfer-encoding:[^\r]*chunked/.test(lower);
          const cl = /\r\ncontent-length:[ \t]*(\d+)/.exec(lower);
          if (c.status === 204 || c.status === 304) complete(c);
          else if (te) c.st = St.ChunkSize;
          else if (cl) {
            c.remaining = Number(cl[1]);
            if (c.remaining === 0) complete(c);
            else c.st = St.Body;
          } else {
            c.st = St.UntilClose;
            c.closing = true;
          }
          break;
        }
        case St.Body:
        case St.ChunkData: {
          const k = Math.min(c.remaining, n - i);
          c.remaining -= k;
          i += k;
          if (c.remaining === 0) {
            if (c.st === St.Body) complete(c);
            else c.st = St.ChunkSize;
          }
          break;
        }
        case St.ChunkSize:
        case St.Trailer: {
          const e = b.indexOf(CRLF, i);
          if (e < 0) {
            c.pending = b.subarray(i);
            return;
          }
          if (c.st === St.ChunkSize) {
            const size = parseInt(b.toString('latin1', i, e), 16); // chunk extensions after ';' stop parseInt
            if (Number.isNaN(size)) {
              c.sock.destroy(); // not HTTP: the close counts the error
              return;
            }
            if (size === 0) c.st = St.Trailer;
            else {
              c.remaining = size + 2; // the data and its CRLF
              c.st = St.ChunkData;
            }
          } else if (e === i) complete(c); // the empty line after the trailers
          i = e + 2;
          break;
        }
        case St.UntilClose:
          return;
      }
    }
  };

  const open = (): Promise<void> =>
    new Promise((resolve) => {
      const sock = connect({ host, port, noDelay: true });
      const c: Conn = {
        sock,
        alive: false,
        busy: false,
        origin: 0,
        sentAt: 0,
        closing: false,
        st: St.Head,
        remaining: 0,
        status: 0,
        pending: null,
      };
      conns.add(c);
      sock.once('connect', () => {
        c.alive = true;
        release(c);
        resolve();
        if (started) pump();
      });
      sock.on('data', (d: Buffer) => {
        feed(c, d);
        if (started) pump();
      });
      sock.on('error', () => {});
      sock.once('close', () => {
        resolve();
        conns.delete(c);
        const wasAlive = c.alive;
        c.alive = false;
        if (c.busy) {
          c.busy = false;
          inFlight--;
          if (c.st === St.UntilClose) {
            {
              const ms = performance.now() - c.origin;
              samples.push(ms);
              spec.onSample?.(c.origin, ms);
            }
            statuses[c.status] = (statuses[c.status] ?? 0) + 1;
          } else errors++;
        } else if (!wasAlive) errors++; // could not connect
        if (finished) return;
        // Keep the set full: a replacement at once after a keep-alive close, a little later after a refusal.
        setTimeout(() => !finished && void open(), wasAlive ? 0 : 50);
        if (started) check();
      });
    });

  const send = (c: Conn, intended: number, now: number) => {
    const h = spec.headers();
    let s = prefix;
    for (const k in h) s += `${k}: ${h[k]}\r\n`;
    c.busy = true;
    inFlight++;
    c.st = St.Head;
    c.sentAt = now;
    c.origin = intended < now ? intended : now;
    c.sock.write(s + '\r\n', 'latin1');
  };

  /** Send every request that is due (within `early` ms), while a connection is free. */
  const pump = (early = 0) => {
    if (finished) return;
    const now = performance.now();
    while (next < total && nFree > 0) {
      const intended = t0 + next * interval;
      if (intended > now + early) break;
      const c = take();
      if (!c) break;
      send(c, intended, now);
      next++;
    }
    check(now);
    arm(now);
  };

  /** Timeouts, the end of the run, the deadline. */
  const check = (now = performance.now()) => {
    if (finished) return;
    if (now - lastSweep >= 100) {
      lastSweep = now;
      for (const c of conns) {
        if (c.busy && now - c.sentAt > timeoutMs) {
          c.busy = false;
          inFlight--;
          errors++;
          c.sock.destroy();
        }
      }
    }
    const deadline = now > t0 + spec.duration * 1000 + timeoutMs;
    if (next < total && !deadline) return;
    if (inFlight > 0 && !deadline) return;
    // Requests never sent or never answered by the deadline count as errors.
    errors += total - next + inFlight;
    finish(now);
  };

  const arm = (now: number) => {
    if (timer || finished) return;
    // While requests are due and no connection is free, poll each millisecond (the sweep rides along).
    const wait = next < total ? t0 + next * interval - PACE_EARLY_MS - now : 100;
    timer = setTimeout(onTimer, Math.max(1, wait));
  };
  const onTimer = () => {
    timer = null;
    pump(PACE_EARLY_MS);
  };

  const finish = (now: number) => {
    finished = true;
    if (timer) clearTimeout(timer);
    timer = null;
    for (const c of conns) c.sock.destroy();
    const seconds = Math.max(1e-9, (now - t0) / 1000);
    const sorted = samples.sorted();
    let sum = 0;
    for (const v of sorted) sum += v;
    const non2xx = Object.entries(statuses).reduce((k, [code, x]) => (code.startsWith('2') ? k : k + x), 0);
    settle({
      requests: samples.n,
      seconds,
      rps: samples.n / seconds,
      p50: pct(sorted, 50),
      p90: pct(sorted, 90),
      p99: pct(sorted, 99),
      mean: samples.n ? sum / samples.n : 0,
      errors,
      non2xx,
      statuses,
    });
  };

  // Connect every connection first; the schedule starts once they are up (or refused).
  void Promise.all(Array.from({ length: nConns }, open)).then(() => {
    t0 = performance.now();
    started = true;
    pump(PACE_EARLY_MS);
  });
  return done;
}

// The load generator: autocannon's programmatic API with a request generator (setupRequest) that
// builds every request's headers (rotating client IPs and, for scenario 4, keys). Latency is recorded
// from autocannon's per-response event in fractional milliseconds for every response, whatever its
// status: autocannon's own histogram keeps whole milliseconds of 2xx responses only, too coarse for a
// 1.5 ms target and blind to the 429 scenario.
import autocannon, { type Instance } from 'autocannon';

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

const pct = (s: Float64Array, p: number) => (s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]);

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

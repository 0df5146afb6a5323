// The load generator: undici pools (one per gateway URL), saturating (each connection sends its next
// request as soon as the last is answered) or paced (open loop at a fixed rate, latency counted from
// the moment a request was due, so a stalled gateway cannot hide its queue: wrk2's correction).
// Every answer's head is read for the audit (src/loadtest/audit.ts); bodies only for errors.
import { Pool, type Dispatcher } from 'undici';
import type { AuditAnswer } from './audit.js';
import type { LoadTestOptions } from './options.js';

export interface Answer extends AuditAnswer {
  /** ms since the run started when the request was due (paced) or sent (saturating). */
  due: number;
  /** Latency in ms, fractional. */
  ms: number;
  url: number;
  route: number;
}

export interface RunResult {
  startedAt: number;
  seconds: number;
  answers: Answer[];
  /** Requests that got no answer, by error. */
  errors: Record<string, number>;
  /** Paced slots skipped because every key was held back for a Retry-After. */
  held: number;
}

export interface Progress {
  seconds: number;
  answers: number;
  rate: number;
  p50: number;
  p99: number;
  byClass: Record<string, number>;
  errors: number;
}

const header = (h: Record<string, string | string[] | undefined>, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};
const num = (v: string | undefined): number | null =>
  v === undefined || v === '' || !Number.isFinite(Number(v)) ? null : Number(v);

/**
 * The `"month"` policy of an answer (an organization with a monthly quota): its quota from RateLimit-Policy,
 * what is left and the seconds to the month's end from RateLimit. The month's end is taken as the UTC month
 * boundary after the middle of the announced month, so a skew between the clocks shifts nothing.
 */
export function monthOf(
  policy: string | undefined,
  current: string | undefined,
  atMs: number,
): { limit: number; remaining: number; reset: number } | null {
  const q = policy === undefined ? null : /"month";q=(\d+);w=(\d+)/.exec(policy);
  const r = current === undefined ? null : /"month";r=(\d+);t=(\d+)/.exec(current);
  if (!q || !r) return null;
  const middle = new Date(atMs + (Number(r[2]) - Number(q[2]) / 2) * 1000);
  return {
    limit: Number(q[1]),
    remaining: Number(r[1]),
    reset: Date.UTC(middle.getUTCFullYear(), middle.getUTCMonth() + 1, 1) / 1000,
  };
}

/** The error code of an error body, whichever envelope it is in. */
export function errorCode(body: string): string | null {
  try {
    const j = JSON.parse(body) as { errorCode?: unknown; error?: { code?: unknown }; error_code?: unknown };
    const c = j.errorCode ?? j.error?.code ?? j.error_code;
    return typeof c === 'string' ? c : null;
  } catch {
    return null;
  }
}

/**
 * Run the load. `clock` is the epoch (for the audit's window arithmetic); `ticks` a monotonic, fractional
 * millisecond clock (for schedules and latencies).
 */
export async function runLoad(
  opts: LoadTestOptions,
  onProgress?: (p: Progress) => void,
  clock: () => number = Date.now,
  ticks: () => number = () => performance.now(),
): Promise<RunResult> {
  const pools = opts.urls.map(
    (u) =>
      new Pool(u, {
        connections: opts.connections,
        pipelining: 1,
        headersTimeout: opts.timeoutMs,
        bodyTimeout: opts.timeoutMs,
      }),
  );
  // A key given twice is one key: its answers (and its holds) go by its first position.
  const keyId = opts.keys.map((k) => opts.keys.indexOf(k));
  const weighted = opts.routes.flatMap((r, i) => Array<number>(r.weight).fill(i));
  const routeBucket = new Map<number, string>();
  // Key and bucket held back until (epoch ms), with the window the refusal came from.
  const heldUntil = new Map<string, { until: number; reset: number }>();
  const pendingRetry = new Map<string, number>();
  const answers: Answer[] = [];
  const errors: Record<string, number> = {};
  let held = 0;
  let seq = 0;
  let sent = 0;
  const more = () => opts.requests === null || sent < opts.requests;
  const startedAt = clock();
  const started = ticks();
  const endAt = started + opts.duration * 1000;

  /** The next key not held back for this route's bucket, or -1. */
  const pickKey = (route: number, now: number): number => {
    const bucket = routeBucket.get(route);
    for (let tried = 0; tried < opts.keys.length; tried++) {
      const k = seq++ % opts.keys.length;
      if (bucket === undefined) return k;
      const hold = heldUntil.get(`${keyId[k]} ${bucket}`);
      if (!hold || hold.until <= now) return k;
    }
    return -1;
  };

  const send = async (urlIndex: number, route: number, key: number, address: string, due: number): Promise<void> => {
    sent++;
    const r = opts.routes[route];
    const secret = opts.keys[key];
    const headers: Record<string, string> = secret.startsWith('svc_v1_')
      ? { 'x-api-key': secret }
      : { authorization: `Bearer ${secret}` };
    if (address) headers['x-forwarded-for'] = address;
    if (r.body !== undefined) headers['content-type'] = 'application/json';
    const bucket = routeBucket.get(route);
    const holdId = bucket === undefined ? null : `${keyId[key]} ${bucket}`;
    const retryOf = holdId === null ? undefined : pendingRetry.get(holdId);
    if (holdId !== null && retryOf !== undefined) pendingRetry.delete(holdId);
    try {
      const res = await pools[urlIndex].request({
        method: r.method as Dispatcher.HttpMethod,
        path: r.path,
        headers,
        body: r.body,
      });
      const at = clock();
      const ms = ticks() - started - due;
      const h = res.headers;
      let code: string | null = null;
      if (res.statusCode >= 400) code = errorCode(await res.body.text());
      else await res.body.dump();
      const policy = header(h, 'ratelimit-policy');
      const name = policy === undefined ? null : (/^"([^"]+)"/.exec(policy)?.[1] ?? null);
      const answerBucket = name === 'ip' ? null : name;
      if (answerBucket !== null) routeBucket.set(route, answerBucket);
      const answer: Answer = {
        key: keyId[key],
        address,
        at,
        status: res.statusCode,
        code,
        bucket: answerBucket,
        limit: num(header(h, 'x-ratelimit-limit')),
        remaining: num(header(h, 'x-ratelimit-remaining')),
        reset: num(header(h, 'x-ratelimit-reset')),
        ipLimit: num(header(h, 'x-ratelimit-ip-limit')),
        ipRemaining: num(header(h, 'x-ratelimit-ip-remaining')),
        retryAfter: num(header(h, 'retry-after')),
        month: monthOf(policy, header(h, 'ratelimit'), at),
        due,
        ms,
        url: urlIndex,
        route,
      };
      if (retryOf !== undefined) answer.afterRetry = { reset: retryOf };
      answers.push(answer);
      if (
        opts.honourRetryAfter &&
        res.statusCode === 429 &&
        answer.retryAfter !== null &&
        answerBucket !== null &&
        answer.reset !== null
      ) {
        const id = `${keyId[key]} ${answerBucket}`;
        const until = at + answer.retryAfter * 1000;
        const prior = heldUntil.get(id);
        if (!prior || prior.until < until) heldUntil.set(id, { until, reset: answer.reset });
        pendingRetry.set(id, answer.reset);
      }
    } catch (err) {
      const name = (err as { code?: string }).code ?? (err as Error).name ?? 'error';
      errors[name] = (errors[name] ?? 0) + 1;
    }
  };

  // Progress: one line a second from the answers of the last second.
  let reported = 0;
  const progressTimer = onProgress
    ? setInterval(() => {
        const now = ticks();
        const recent = answers.slice(reported);
        reported = answers.length;
        const lat = recent.map((a) => a.ms).sort((a, b) => a - b);
        const byClass: Record<string, number> = {};
        for (const a of answers) {
          const c = a.status === 429 ? '429' : `${Math.floor(a.status / 100)}xx`;
          byClass[c] = (byClass[c] ?? 0) + 1;
        }
        onProgress({
          seconds: (now - started) / 1000,
          answers: answers.length,
          rate: recent.length,
          p50: lat.length ? lat[Math.floor(lat.length * 0.5)] : 0,
          p99: lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))] : 0,
          byClass,
          errors: Object.values(errors).reduce((s, n) => s + n, 0),
        });
      }, 1000)
    : null;

  let addressSeq = 0;
  const nextAddress = () => (opts.addresses.length ? opts.addresses[addressSeq++ % opts.addresses.length] : '');
  let routeSeq = 0;
  const nextRoute = () => weighted[routeSeq++ % weighted.length];

  try {
    if (opts.rate === null) {
      // Saturating: `connections` loops per URL.
      const loop = async (urlIndex: number) => {
        while (ticks() < endAt && more()) {
          const route = nextRoute();
          const now = clock();
          const key = pickKey(route, now);
          if (key < 0) {
            const wake = Math.min(now + (endAt - ticks()), ...[...heldUntil.values()].map((h) => h.until));
            await new Promise((r) => setTimeout(r, Math.max(1, wake - now)));
            continue;
          }
          await send(urlIndex, route, key, nextAddress(), ticks() - started);
        }
      };
      await Promise.all(opts.urls.flatMap((_, u) => Array.from({ length: opts.connections }, () => loop(u))));
    } else {
      // Paced: slot i is due at i / rate seconds; late slots are sent at once, their wait counted.
      const interval = 1000 / opts.rate;
      const inFlight = new Set<Promise<void>>();
      const cap = opts.connections * opts.urls.length * 4;
      let slot = 0;
      let urlSeq = 0;
      while (true) {
        const now = ticks();
        if (now >= endAt || !more()) break;
        let due = slot * interval;
        while (due <= now - started && inFlight.size < cap && more()) {
          const route = nextRoute();
          const key = pickKey(route, clock());
          if (key < 0) held++;
          else {
            const p = send(urlSeq++ % pools.length, route, key, nextAddress(), due);
            inFlight.add(p);
            void p.finally(() => inFlight.delete(p));
          }
          due = ++slot * interval;
        }
        await new Promise((r) => setTimeout(r, Math.max(0, Math.min(5, started + due - ticks()))));
      }
      await Promise.all(inFlight);
    }
  } finally {
    if (progressTimer) clearInterval(progressTimer);
    await Promise.all(pools.map((p) => p.close()));
  }
  return { startedAt, seconds: (ticks() - started) / 1000, answers, errors, held };
}

// The load generator: undici pools (one per gateway URL), saturating (each connection sends its next
// request as soon as the last is answered) or paced (open loop at a fixed rate, latency counted from
// the moment a request was due, so a stalled gateway cannot hide its queue: wrk2's correction).
// Every answer's head is read for the audit (src/loadtest/audit.ts); bodies only for errors.
import { Pool, type Dispatcher } from 'undici';
import type { AuditAnswer } from './audit.js';
import type { LoadTestOptions } from './options.js';
import type { ProfileTarget } from './profile.js';

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

/** Key and bucket held back after a 429 with Retry-After (when honoured), and the first request after it. */
interface Holds {
  /** The next key not held back for this route's bucket, or -1. */
  pickKey(route: number, now: number): number;
  /** The window a request for this key and route retries after, taken once (undefined: not a retry). */
  takeRetry(route: number, key: number): number | undefined;
  /** The route's bucket, learned from its answers (RateLimit-Policy). */
  learnBucket(route: number, bucket: string): void;
  /** Hold the key's bucket back until `until` (epoch ms); the next request for it retries `reset`'s window. */
  hold(key: number, bucket: string, until: number, reset: number): void;
  /** The earliest end of a hold, epoch ms (Infinity: none). */
  earliestEnd(): number;
}

function createHolds(opts: LoadTestOptions, keyId: number[]): Holds {
  const routeBucket = new Map<number, string>();
  // Key and bucket held back until (epoch ms), with the window the refusal came from.
  const heldUntil = new Map<string, { until: number; reset: number }>();
  const pendingRetry = new Map<string, number>();
  let seq = 0;
  return {
    pickKey(route, now) {
      const bucket = routeBucket.get(route);
      for (let tried = 0; tried < opts.keys.length; tried++) {
        const k = seq++ % opts.keys.length;
        if (bucket === undefined) return k;
        const hold = heldUntil.get(`${keyId[k]} ${bucket}`);
        if (!hold || hold.until <= now) return k;
      }
      return -1;
    },
    takeRetry(route, key) {
      const bucket = routeBucket.get(route);
      const holdId = bucket === undefined ? null : `${keyId[key]} ${bucket}`;
      const retryOf = holdId === null ? undefined : pendingRetry.get(holdId);
      if (holdId !== null && retryOf !== undefined) pendingRetry.delete(holdId);
      return retryOf;
    },
    learnBucket(route, bucket) {
      routeBucket.set(route, bucket);
    },
    hold(key, bucket, until, reset) {
      const id = `${keyId[key]} ${bucket}`;
      const prior = heldUntil.get(id);
      if (!prior || prior.until < until) heldUntil.set(id, { until, reset });
      pendingRetry.set(id, reset);
    },
    earliestEnd() {
      return Math.min(...[...heldUntil.values()].map((h) => h.until));
    },
  };
}

/** The policies of RateLimit-Policy (`"read";q=20;w=60, "ip";q=100;w=60`) or RateLimit (`r` and `t`), in order. */
function policies(value: string | undefined, a: 'q' | 'r', b: 'w' | 't'): { name: string; x: number; y: number }[] {
  if (value === undefined) return [];
  const re = new RegExp(`"([^"]+)";${a}=(\\d+);${b}=(\\d+)`, 'g');
  return [...value.matchAll(re)].map((m) => ({ name: m[1], x: Number(m[2]), y: Number(m[3]) }));
}

/**
 * The key's and the address's layers of an answer of a profile's gateway: from X-RateLimit-* when the
 * answer has them, else from the draft's fields (the key's policy is the first that is not "ip" or
 * "month"; its window ends on the wall-clock minute, `t` seconds after the answer).
 */
function profileLayers(h: Dispatcher.ResponseData['headers'], at: number) {
  const policy = header(h, 'ratelimit-policy');
  const stated = policies(policy, 'q', 'w');
  const current = policies(header(h, 'ratelimit'), 'r', 't');
  const key = stated.find((p) => p.name !== 'ip' && p.name !== 'month');
  const keyNow = key && current.find((c) => c.name === key.name);
  const ip = stated.find((p) => p.name === 'ip');
  const ipNow = current.find((c) => c.name === 'ip');
  const xLimit = num(header(h, 'x-ratelimit-limit'));
  const families = {
    xRateLimit: xLimit !== null || header(h, 'x-ratelimit-ip-limit') !== undefined,
    ietf: policy !== undefined,
  };
  return {
    families,
    bucket: key?.name ?? null,
    limit: xLimit ?? key?.x ?? null,
    remaining: num(header(h, 'x-ratelimit-remaining')) ?? keyNow?.x ?? null,
    reset: num(header(h, 'x-ratelimit-reset')) ?? (keyNow ? Math.round((at / 1000 + keyNow.y) / 60) * 60 : null),
    ipLimit: num(header(h, 'x-ratelimit-ip-limit')) ?? ip?.x ?? null,
    ipRemaining: num(header(h, 'x-ratelimit-ip-remaining')) ?? ipNow?.x ?? null,
  };
}

/** The code of a problem-details answer of the gateway: its code, with the type the profile gives it. */
function problemCode(body: string, contentType: string | undefined, profile: ProfileTarget): string | null {
  if (!contentType?.startsWith('application/problem+json')) return null;
  try {
    const j = JSON.parse(body) as { code?: unknown; type?: unknown };
    return typeof j.code === 'string' && profile.typeOf.get(j.code) === j.type ? j.code : null;
  } catch {
    return null;
  }
}

/** What an answer's head and error body say, as the audit reads it. */
async function readAnswer(
  res: Dispatcher.ResponseData,
  at: number,
  profile: ProfileTarget | null,
): Promise<Omit<AuditAnswer, 'key' | 'address' | 'afterRetry' | 'routeBucket'>> {
  const h = res.headers;
  let code: string | null = null;
  if (res.statusCode >= 400) {
    const body = await res.body.text();
    code = profile ? problemCode(body, header(h, 'content-type'), profile) : errorCode(body);
  } else await res.body.dump();
  const policy = header(h, 'ratelimit-policy');
  const common = {
    at,
    status: res.statusCode,
    code,
    retryAfter: num(header(h, 'retry-after')),
    month: monthOf(policy, header(h, 'ratelimit'), at),
  };
  if (profile) return { ...common, ...profileLayers(h, at) };
  const name = policy === undefined ? null : (/^"([^"]+)"/.exec(policy)?.[1] ?? null);
  return {
    ...common,
    bucket: name === 'ip' ? null : name,
    limit: num(header(h, 'x-ratelimit-limit')),
    remaining: num(header(h, 'x-ratelimit-remaining')),
    reset: num(header(h, 'x-ratelimit-reset')),
    ipLimit: num(header(h, 'x-ratelimit-ip-limit')),
    ipRemaining: num(header(h, 'x-ratelimit-ip-remaining')),
  };
}

/**
 * Headers of a request with a key: under a profile, its key field (`Authorization: Bearer` or the key
 * alone); else `x-api-key` for a /v1 key, a bearer token otherwise.
 */
function requestHeaders(
  secret: string,
  address: string,
  hasBody: boolean,
  profile: ProfileTarget | null,
): Record<string, string> {
  const bearer = profile ? profile.key.bearer : !secret.startsWith('svc_v1_');
  const headers: Record<string, string> = bearer
    ? { authorization: `Bearer ${secret}` }
    : { [profile?.key.header ?? 'x-api-key']: secret };
  if (address) headers['x-forwarded-for'] = address;
  if (hasBody) headers['content-type'] = 'application/json';
  return headers;
}

/** One line a second from the answers of the last second. */
function startProgress(
  onProgress: (p: Progress) => void,
  answers: Answer[],
  errors: Record<string, number>,
  elapsedMs: () => number,
): ReturnType<typeof setInterval> {
  let reported = 0;
  return setInterval(() => {
    const elapsed = elapsedMs();
    const recent = answers.slice(reported);
    reported = answers.length;
    const lat = recent.map((a) => a.ms).sort((a, b) => a - b);
    const byClass: Record<string, number> = {};
    for (const a of answers) {
      const c = a.status === 429 ? '429' : `${Math.floor(a.status / 100)}xx`;
      byClass[c] = (byClass[c] ?? 0) + 1;
    }
    onProgress({
      seconds: elapsed / 1000,
      answers: answers.length,
      rate: recent.length,
      p50: lat.length ? lat[Math.floor(lat.length * 0.5)] : 0,
      p99: lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))] : 0,
      byClass,
      errors: Object.values(errors).reduce((s, n) => s + n, 0),
    });
  }, 1000);
}

/** A run under way: its schedule, the next route, key and address, and the sender of one request. */
interface Run {
  opts: LoadTestOptions;
  clock: () => number;
  ticks: () => number;
  started: number;
  endAt: number;
  holds: Holds;
  pools: number;
  /** False once `opts.requests` are sent. */
  more(): boolean;
  nextRoute(): number;
  nextAddress(): string;
  send(urlIndex: number, route: number, key: number, address: string, due: number): Promise<void>;
}

/** Saturating: `connections` loops per URL, each sending its next request once the last is answered. */
async function saturate(run: Run): Promise<void> {
  const { opts, clock, ticks, endAt, holds } = run;
  const loop = async (urlIndex: number) => {
    while (ticks() < endAt && run.more()) {
      const route = run.nextRoute();
      const now = clock();
      const key = holds.pickKey(route, now);
      if (key < 0) {
        const wake = Math.min(now + (endAt - ticks()), holds.earliestEnd());
        await new Promise((r) => setTimeout(r, Math.max(1, wake - now)));
        continue;
      }
      await run.send(urlIndex, route, key, run.nextAddress(), ticks() - run.started);
    }
  };
  await Promise.all(opts.urls.flatMap((_, u) => Array.from({ length: opts.connections }, () => loop(u))));
}

/** Paced: slot i is due at i / rate seconds; late slots are sent at once, their wait counted. Returns the slots held. */
async function pace(run: Run, rate: number): Promise<number> {
  const { opts, clock, ticks, started, endAt } = run;
  const interval = 1000 / rate;
  const inFlight = new Set<Promise<void>>();
  const cap = opts.connections * opts.urls.length * 4;
  let held = 0;
  let slot = 0;
  let urlSeq = 0;
  while (true) {
    const now = ticks();
    if (now >= endAt || !run.more()) break;
    let due = slot * interval;
    while (due <= now - started && inFlight.size < cap && run.more()) {
      const route = run.nextRoute();
      const key = run.holds.pickKey(route, clock());
      if (key < 0) held++;
      else {
        const p = run.send(urlSeq++ % run.pools, route, key, run.nextAddress(), due);
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      due = ++slot * interval;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(5, started + due - ticks()))));
  }
  await Promise.all(inFlight);
  return held;
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
  const holds = createHolds(opts, keyId);
  const routeBuckets = opts.routes.map((r) => opts.profile?.bucketOf(r.method, r.path) ?? null);
  const answers: Answer[] = [];
  const errors: Record<string, number> = {};
  let sent = 0;
  const startedAt = clock();
  const started = ticks();
  let addressSeq = 0;
  let routeSeq = 0;

  const send = async (urlIndex: number, route: number, key: number, address: string, due: number): Promise<void> => {
    sent++;
    const r = opts.routes[route];
    const headers = requestHeaders(opts.keys[key], address, r.body !== undefined, opts.profile);
    const retryOf = holds.takeRetry(route, key);
    try {
      const res = await pools[urlIndex].request({
        method: r.method as Dispatcher.HttpMethod,
        path: r.path,
        headers,
        body: r.body,
      });
      const at = clock();
      const ms = ticks() - started - due;
      const read = await readAnswer(res, at, opts.profile);
      // Without the draft's fields the bucket is the route's, by the profile's table.
      if (opts.profile && read.bucket === null && read.limit !== null) read.bucket = routeBuckets[route];
      if (read.bucket !== null) holds.learnBucket(route, read.bucket);
      const answer: Answer = { key: keyId[key], address, ...read, due, ms, url: urlIndex, route };
      if (opts.profile) answer.routeBucket = routeBuckets[route];
      if (retryOf !== undefined) answer.afterRetry = { reset: retryOf };
      answers.push(answer);
      if (
        opts.honourRetryAfter &&
        res.statusCode === 429 &&
        answer.retryAfter !== null &&
        answer.bucket !== null &&
        answer.reset !== null
      )
        holds.hold(key, answer.bucket, at + answer.retryAfter * 1000, answer.reset);
    } catch (err) {
      const name = (err as { code?: string }).code ?? (err as Error).name ?? 'error';
      errors[name] = (errors[name] ?? 0) + 1;
    }
  };

  const run: Run = {
    opts,
    clock,
    ticks,
    started,
    endAt: started + opts.duration * 1000,
    holds,
    pools: pools.length,
    more: () => opts.requests === null || sent < opts.requests,
    nextRoute: () => weighted[routeSeq++ % weighted.length],
    nextAddress: () => (opts.addresses.length ? opts.addresses[addressSeq++ % opts.addresses.length] : ''),
    send,
  };
  const progressTimer = onProgress ? startProgress(onProgress, answers, errors, () => ticks() - started) : null;
  let held = 0;
  try {
    if (opts.rate === null) await saturate(run);
    else held = await pace(run, opts.rate);
  } finally {
    if (progressTimer) clearInterval(progressTimer);
    await Promise.all(pools.map((p) => p.close()));
  }
  return { startedAt, seconds: (ticks() - started) / 1000, answers, errors, held };
}

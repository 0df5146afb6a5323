// Forwarding over undici Pools (keep-alive connections to each target), through undici's lowest-level
// `dispatch` API: no stream or promise per request, and the response head arrives as raw fields that
// are copied once (the gateway's CPU per request went from 165 to 128 µs with it; bench/RESULTS.md,
// "2026-11-23: the forwarding path, per commit"). The request target is sent exactly as it was
// authorized and signed (no URL parser re-serialises it), behind the target's base path and with its
// authority as Host; every forwarded request is bounded by UPSTREAM_TIMEOUT_MS from the moment it is
// handed over (waiting for a pooled connection and every try included), and the response head is
// cleaned (./response-head.ts). A request goes to a target of its service (./upstreams/: the targets,
// their pools, the retry budget); a try that failed before any byte reached the client may be made
// again on another (Exchange.retryTarget says which).
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { RouteForwarding } from '../config/services.js';
import type { ResponseFields } from './fields.js';
import { DeadlineHeap, Deadlines, type DeadlineQueue } from './deadlines.js';
import { copyResponseHeaders } from './response-head.js';
import { TargetPools } from './upstreams/pools.js';
import { RetryBudget } from './upstreams/retry-budget.js';

export type UpstreamFailure = 'bad_gateway' | 'gateway_timeout';

/** Request fields as a flat list, name then value (a value of several is an array), in the order sent. */
export type FieldList = (string | string[])[];

export interface UpstreamRequest {
  method: string;
  /** Origin-form target: path and query exactly as authorized and signed. */
  target: string;
  /** A flat list is handed to undici as it is; an object is walked by its keys first. Host is the target's. */
  headers: FieldList | OutgoingHttpHeaders;
  body: Buffer | null;
  /** The gateway's own response fields: the upstream's are appended and all written in one writeHead. */
  head: ResponseFields;
  /** The route's retry and timeouts (src/config/services.ts); without it, the service's. */
  route?: RouteForwarding;
}

export interface Forwarder {
  /** Forward and stream the answer into `res`; `onFail` answers when nothing was sent yet. `done` runs once: at the answer's head, or when it ended without one. */
  forward(
    request: UpstreamRequest,
    res: ServerResponse,
    onFail: (kind: UpstreamFailure) => void,
    done?: () => void,
  ): void;
  close(): Promise<void>;
}

export interface ForwarderOptions {
  upstream: string;
  timeoutMs: number;
  /** Connections to the upstream at most; further requests wait for one (within the timeout). */
  maxSockets: number;
  /** CORS is on: the Access-Control-* response fields are the gateway's, not the upstream's. */
  ownCors?: boolean;
  /** Seconds from handing the request over to the response head. */
  observe?(seconds: number): void;
  /** UPSTREAM_CLIENT: the pools' HTTP client (./upstreams/pools.ts). */
  client?: 'undici' | 'lean';
}

// What this module uses of ./upstreams/types.ts (Target, TargetSet, UpstreamEvents), declared by the
// members used: that module names this one's Forwarder, and naming it back would close a circle.

/** One address of a service. */
export interface ForwardTarget {
  readonly key: string;
  /** Where to connect: `http://10.0.0.5:9000`. */
  readonly origin: string;
  /** The Host to send. */
  readonly authority: string;
  /** Put in front of the request target ('' for none). */
  readonly basePath: string;
  /** Requests in flight on it: one from a try's start to its end. */
  outstanding: number;
}

/** How one try on a target ended (./upstreams/types.ts, AttemptResult). */
export type AttemptOutcome = 'ok' | 'connect_failure' | 'reset' | 'timeout' | 'status_5xx';

export interface TargetChoice<T extends ForwardTarget> {
  pick(tried?: ReadonlySet<T>): T | null;
  report(target: T, result: AttemptOutcome): void;
}

export interface AttemptEvents {
  attempt(service: string, target: string, result: AttemptOutcome): void;
  retried(service: string, cause: 'not_sent' | 'sent'): void;
  budgetExhausted(service: string): void;
}

/** One service's forwarding (./upstreams/forwarder.ts builds it from the service's settings). */
export interface ServiceForwarding<T extends ForwardTarget> {
  service: string;
  targets: TargetChoice<T>;
  pools: TargetPools;
  budget: RetryBudget;
  events: AttemptEvents | null;
  /** Tries after the first, at most. */
  retries: number;
  /** UPSTREAM_TIMEOUT_MS: every try of a request, from the first hand-over to the answer's head. */
  timeoutMs: number;
  /** The service's bounds, each at most `timeoutMs`: a try's hand-over to its head, a silence in the body. */
  headMs: number;
  idleMs: number;
  /** The pools' bound on a connection's set-up; a route may shorten it (Exchange.boundHead). */
  connectMs: number;
  /** The client's Host goes upstream (as Envoy does); false: the target's configured authority. */
  preserveHost: boolean;
  ownCors: boolean;
  observe?(seconds: number): void;
}

class UpstreamTimeout extends Error {
  readonly code = 'UND_ERR_GATEWAY_TIMEOUT';
}
const TIMEOUT_CODES = new Set([
  'UND_ERR_GATEWAY_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);
/** Methods a request may be sent again with (RFC 9110 section 9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
/** The reasons a try is abandoned: handed to undici's abort, which reports them to a handler no longer heard. */
const SUPERSEDED = new Error('superseded by another try');
const CLIENT_GONE = new Error('client closed');
const ANSWERED = new Error('answered meanwhile');

/** Puts the target's authority in the request's Host field, at `at` when known; returns where it is. */
function setHost(headers: FieldList | OutgoingHttpHeaders, authority: string, at: number): number {
  if (!Array.isArray(headers)) {
    for (const k in headers) if (k !== 'host' && k.length === 4 && k.toLowerCase() === 'host') delete headers[k];
    headers.host = authority;
    return -1;
  }
  if (at < 0) {
    for (let i = 0; i < headers.length; i += 2) {
      const k = headers[i] as string;
      if (k === 'host' || (k.length === 4 && k.toLowerCase() === 'host')) {
        at = i + 1;
        break;
      }
    }
    // undici refuses a second Host, so the client's is replaced rather than another added.
    if (at < 0) return headers.push('host', authority) - 1;
  }
  headers[at] = authority;
  return at;
}

class Forwarding<T extends ForwardTarget> implements Forwarder {
  /** Every entry of a Deadlines list has its bound: one list per bound in use. */
  private readonly lists = new Map<number, Deadlines<Exchange<T>>>();
  readonly head: Deadlines<Exchange<T>>;
  readonly idle: Deadlines<Exchange<T>>;
  readonly late = new DeadlineHeap<Exchange<T>>();
  closed = false;

  constructor(readonly s: ServiceForwarding<T>) {
    this.head = this.list(s.headMs);
    this.idle = this.list(s.idleMs);
  }

  /** The list of a bound, at most the whole one. */
  list(ms: number): Deadlines<Exchange<T>> {
    const bound = Math.min(ms, this.s.timeoutMs);
    let list = this.lists.get(bound);
    if (list === undefined) this.lists.set(bound, (list = new Deadlines(bound)));
    return list;
  }

  forward(
    request: UpstreamRequest,
    res: ServerResponse,
    onFail: (kind: UpstreamFailure) => void,
    done?: () => void,
  ): void {
    if (this.closed) {
      onFail('bad_gateway');
      return done?.();
    }
    new Exchange(this, request, res, onFail, done).start();
  }

  close(): Promise<void> {
    this.closed = true;
    for (const list of this.lists.values()) list.stop();
    this.late.stop();
    return this.s.pools.close();
  }
}

/**
 * One forwarded request, over one try or several. It is itself undici's dispatch handler of its first
 * try; a retry's handler is an Attempt. Only the try that is `live` is heard: a try abandoned (timed
 * out, superseded, its client gone) may still be queued in a pool, and is aborted when undici gets to
 * it (onConnect), its error then reaching a handler no longer live.
 */
class Exchange<T extends ForwardTarget> implements Dispatcher.DispatchHandlers {
  /** Its place in a Deadlines list or the heap (`where`). */
  deadline = 0;
  queued = false;
  prev: Exchange<T> | null = null;
  next: Exchange<T> | null = null;
  heapIndex = -1;
  private where: DeadlineQueue<Exchange<T>> | null = null;
  private readonly headList: Deadlines<Exchange<T>>;
  private readonly idleList: Deadlines<Exchange<T>>;
  /** A route's connect bound, when shorter than the pools'. */
  private readonly connectList: Deadlines<Exchange<T>> | null;
  private started = 0;
  private tryStarted = 0;
  /** Tries so far; the number of the one heard (0: none). */
  private tries = 0;
  private live = 0;
  private target: T | null = null;
  private tried: Set<T> | null = null;
  private abortUpstream: ((err: Error) => void) | null = null;
  private sent = false;
  private connecting = false;
  private relayed = false;
  private finished = false;
  private gone = false;
  private retrySlot = false;
  private hostAt = -1;
  private resumeUpstream: (() => void) | null = null;
  private waitsForDrain = false;

  constructor(
    private readonly f: Forwarding<T>,
    private readonly request: UpstreamRequest,
    private readonly res: ServerResponse,
    private readonly onFail: (kind: UpstreamFailure) => void,
    private done: (() => void) | undefined,
  ) {
    const t = request.route?.timeouts;
    if (t === undefined) {
      this.headList = f.head;
      this.idleList = f.idle;
      this.connectList = null;
    } else {
      this.headList = t.headMs === undefined ? f.head : f.list(t.headMs);
      this.idleList = t.idleMs === undefined ? f.idle : f.list(t.idleMs);
      this.connectList = t.connectMs === undefined || t.connectMs >= f.s.connectMs ? null : f.list(t.connectMs);
    }
    f.s.budget.begin();
    res.on('close', this.onClientClose);
  }

  start(): void {
    const target = this.f.s.targets.pick();
    if (target === null) return this.fail(false);
    this.attempt(target);
  }

  // undici's callbacks of the first try; a retry's come through its Attempt.
  onConnect(abort: (err?: Error) => void): void {
    if (this.live === 1) this.connected(abort);
    else abort(SUPERSEDED);
  }
  onRequestSent(): void {
    if (this.live === 1) this.sent = true;
  }
  onHeaders(statusCode: number, raw: Buffer[], resume: () => void, statusText: string): boolean {
    return this.live === 1 ? this.headers(statusCode, raw, resume, statusText) : true;
  }
  onData(chunk: Buffer): boolean {
    return this.live === 1 ? this.data(chunk) : true;
  }
  onComplete(): void {
    if (this.live === 1) this.complete();
  }
  onError(err: Error): void {
    if (this.live === 1) this.errored(err);
  }

  isLive(n: number): boolean {
    return this.live === n;
  }

  markSent(): void {
    this.sent = true;
  }

  /** One try on `target`. */
  private attempt(target: T): void {
    const { request } = this;
    const now = performance.now();
    const n = ++this.tries;
    if (n === 1) this.started = now;
    this.live = n;
    this.target = target;
    target.outstanding++;
    this.abortUpstream = null;
    this.sent = false;
    this.tryStarted = now;
    this.boundHead(now);
    if (!this.f.s.preserveHost) this.hostAt = setHost(request.headers, target.authority, this.hostAt);
    this.f.s.pools.get(target).dispatch(
      {
        origin: target.origin,
        method: request.method as Dispatcher.HttpMethod,
        path: target.basePath + request.target,
        headers: request.headers as Record<string, string | string[]> | string[],
        body: request.body,
      },
      n === 1 ? this : new Attempt(this, n),
    );
  }

  /** A retry's try, a tick after the failure that called for it (out of undici's error paths). */
  retry(target: T): void {
    if (this.finished) return; // the client left meanwhile
    if (this.f.closed) {
      this.releaseRetry();
      return this.fail(false);
    }
    this.attempt(target);
  }

  /**
   * The try's bound until its head: the head bound from its hand-over, within what is left of the
   * whole bound. A route's connect bound shorter than the pools' applies until undici hands the try a
   * connection (waiting for a pooled one included: the route asked for an answer soon or another target).
   */
  private boundHead(now: number): void {
    const end = this.started + this.f.s.timeoutMs;
    const head = now + this.headList.ms;
    const connect = this.connectList;
    if (connect !== null && now + connect.ms < Math.min(head, end)) {
      this.connecting = true;
      return this.bound(connect, now);
    }
    this.connecting = false;
    if (head <= end) this.bound(this.headList, now);
    else this.boundAt(end);
  }

  private bound(list: Deadlines<Exchange<T>>, now: number): void {
    if (this.where !== list) {
      this.where?.remove(this);
      this.where = list;
    }
    list.restart(this, now);
  }

  private boundAt(deadline: number): void {
    const late = this.f.late;
    if (this.where !== late) {
      this.where?.remove(this);
      this.where = late;
    }
    late.at(this, deadline);
  }

  connected(abort: (err?: Error) => void): void {
    this.abortUpstream = abort;
    if (this.connecting) {
      this.connecting = false;
      this.boundAt(Math.min(this.tryStarted + this.headList.ms, this.started + this.f.s.timeoutMs));
    }
  }

  timedOut(): void {
    this.where = null;
    // After the head, a silence in the body: the abort's error closes the client's connection.
    if (this.relayed) return this.abortUpstream?.(new UpstreamTimeout('upstream silent'));
    const connected = this.abortUpstream !== null;
    const sent = this.sent;
    this.drop(new UpstreamTimeout('upstream timeout'));
    this.failed(connected ? 'timeout' : 'connect_failure', sent, true);
  }

  /** The client went away: the upstream need not finish the work for nobody. */
  private readonly onClientClose = () => {
    if (!this.res.writableFinished && !this.gone) {
      this.gone = true;
      if (this.live !== 0) this.drop(CLIENT_GONE);
    }
    this.end();
  };

  /** No longer hears the live try, and aborts it (now if it has a connection, else when it gets one). */
  private drop(err: Error): void {
    this.live = 0;
    const abort = this.abortUpstream;
    this.abortUpstream = null;
    abort?.(err);
  }

  private drained(): void {
    // The client took what was written: its pace, not the upstream's silence, held the body up.
    if (!this.finished) this.bound(this.idleList, performance.now());
    this.resumeUpstream?.();
  }

  headers(statusCode: number, raw: Buffer[], resume: () => void, statusText: string): boolean {
    if (statusCode < 200) return true; // an interim answer (102, 103): the final one follows
    const now = performance.now();
    const { res, f } = this;
    if (res.headersSent || res.destroyed) {
      // Answered meanwhile (the drain's deadline) or the client is gone: nothing to relay, and that
      // answer is left to finish (finished first, so the abort's error does not destroy it).
      this.end();
      this.drop(ANSWERED);
      return false;
    }
    const target = this.target!;
    this.releaseRetry();
    this.report(target, statusCode >= 500 ? 'status_5xx' : 'ok');
    // A 502, 503 or 504 says the target (or what stands behind it) could not serve the request now, not
    // that the request is wrong: one the route lets us repeat goes to another target before anything
    // reaches the client, as Envoy's `gateway-error` retry policy and nginx's proxy_next_upstream
    // http_502 http_503 http_504 do. Only to a target not tried yet (the same one would most likely
    // answer the same), within the attempts, the whole bound and the budget (which keeps a service
    // shedding load with 503s from getting much of its traffic twice); otherwise the answer is relayed
    // as it came. A 500 is the service's own verdict on the request, relayed.
    if (statusCode >= 502 && statusCode <= 504) {
      const next = this.retryTarget(target, true, true);
      if (next !== null) {
        this.detach();
        this.drop(SUPERSEDED);
        process.nextTick(retryOn, this, next);
        return false;
      }
    }
    this.relayed = true;
    this.release();
    f.s.observe?.((now - this.started) / 1000);
    copyResponseHeaders(raw, statusCode, this.request.head, f.s.ownCors);
    res.writeHead(statusCode, statusText || undefined, this.request.head);
    this.resumeUpstream = resume;
    this.bound(this.idleList, now);
    return true;
  }

  data(chunk: Buffer): boolean {
    this.bound(this.idleList, performance.now());
    // false pauses the upstream until the client has taken what was written ('drain').
    if (this.res.write(chunk)) return true;
    // Listened to from the first time it is needed: most answers never fill the socket's buffer.
    if (!this.waitsForDrain) {
      this.waitsForDrain = true;
      this.res.on('drain', () => this.drained());
    }
    return false;
  }

  complete(): void {
    this.res.end();
    this.end();
  }

  errored(err: Error): void {
    this.live = 0;
    if (this.finished) return;
    const { res } = this;
    if (this.relayed || res.headersSent || res.destroyed) {
      // A reset after the head: the status line is gone, so the only clean answer is to close.
      if (!res.writableFinished) res.destroy();
      return this.end();
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'UND_ERR_INVALID_ARG') {
      // undici refused the request itself (a field it will not send): no target would take it.
      this.detach();
      return this.fail(false);
    }
    // A pool closed under the try (its target gone, the service closing) is no fault of the target.
    const ours = code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED';
    const connected = this.abortUpstream !== null;
    this.abortUpstream = null;
    this.failed(ours ? null : connected ? 'reset' : 'connect_failure', this.sent, TIMEOUT_CODES.has(code ?? ''));
  }

  /** The live try failed before its head (and is no longer heard): another try, or the failure answered. */
  private failed(result: AttemptOutcome | null, sent: boolean, timeout: boolean): void {
    const target = this.detach();
    this.releaseRetry();
    if (result !== null) this.report(target, result);
    const next = this.retryTarget(target, sent, false);
    if (next !== null) process.nextTick(retryOn, this, next);
    else this.fail(timeout);
  }

  /**
   * The target of a retry, or null when none is made. A try that was not sent (no connection, or it
   * closed before the request was written) is made again whatever the method: the target never saw
   * it. One that was sent and failed before any byte of its answer is made again only when its method
   * is idempotent and its route allows it, since the target may have acted on it. Never after the
   * client left or the whole bound ran out, at most `retries` times, and a sent one only within the budget.
   */
  private retryTarget(failed: T, sent: boolean, fresh: boolean): T | null {
    const { f, request } = this;
    const s = f.s;
    if (this.gone || f.closed || this.tries > s.retries) return null;
    if (sent && (request.route?.retry === false || !IDEMPOTENT.has(request.method))) return null;
    if (performance.now() >= this.started + s.timeoutMs - 1) return null;
    const tried = (this.tried ??= new Set<T>());
    tried.add(failed);
    const next = s.targets.pick(tried);
    if (next === null || (fresh && tried.has(next))) return null;
    // The budget keeps retries from adding load to a failing service. A try that was not sent added
    // none (the target refused or never took the connection), so its retry is bounded by the
    // attempts alone: a target killed under load then costs no idempotent request at all.
    if (sent) {
      if (!s.budget.tryRetry()) {
        s.events?.budgetExhausted(s.service);
        return null;
      }
      this.retrySlot = true;
    }
    s.events?.retried(s.service, sent ? 'sent' : 'not_sent');
    return next;
  }

  private report(target: T, result: AttemptOutcome): void {
    const s = this.f.s;
    s.targets.report(target, result);
    s.events?.attempt(s.service, target.key, result);
  }

  /** The try leaves its target and its bound. */
  private detach(): T {
    const target = this.target!;
    this.target = null;
    target.outstanding--;
    this.where?.remove(this);
    this.where = null;
    return target;
  }

  /** A retry stops counting against the budget at its answer's head or its end. */
  private releaseRetry(): void {
    if (!this.retrySlot) return;
    this.retrySlot = false;
    this.f.s.budget.retryEnded();
  }

  /** Nothing was relayed and nothing more will be tried: the caller answers. */
  private fail(timeout: boolean): void {
    const { res } = this;
    if (res.headersSent || res.destroyed) {
      if (!res.writableFinished) res.destroy();
    } else {
      this.onFail(timeout ? 'gateway_timeout' : 'bad_gateway');
    }
    this.end();
  }

  private end(): void {
    if (this.finished) return;
    this.finished = true;
    this.where?.remove(this);
    this.where = null;
    if (this.target !== null) this.detach();
    this.releaseRetry();
    this.f.s.budget.end();
    this.tried = null;
    this.release();
  }

  /** `done`, once: at the answer's head (no try follows it; the body is not sent again) or at the end. */
  private release(): void {
    const done = this.done;
    this.done = undefined;
    done?.();
  }
}

function retryOn<T extends ForwardTarget>(exchange: Exchange<T>, target: T): void {
  exchange.retry(target);
}

/** The handler of a retry's dispatch: heard while it is its exchange's live try. */
class Attempt<T extends ForwardTarget> implements Dispatcher.DispatchHandlers {
  constructor(
    private readonly exchange: Exchange<T>,
    private readonly n: number,
  ) {}

  onConnect(abort: (err?: Error) => void): void {
    if (this.exchange.isLive(this.n)) this.exchange.connected(abort);
    else abort(SUPERSEDED);
  }
  onRequestSent(): void {
    if (this.exchange.isLive(this.n)) this.exchange.markSent();
  }
  onHeaders(statusCode: number, raw: Buffer[], resume: () => void, statusText: string): boolean {
    return this.exchange.isLive(this.n) ? this.exchange.headers(statusCode, raw, resume, statusText) : true;
  }
  onData(chunk: Buffer): boolean {
    return this.exchange.isLive(this.n) ? this.exchange.data(chunk) : true;
  }
  onComplete(): void {
    if (this.exchange.isLive(this.n)) this.exchange.complete();
  }
  onError(err: Error): void {
    if (this.exchange.isLive(this.n)) this.exchange.errored(err);
  }
}

/** A service's forwarder over its pools: see ServiceForwarding. */
export function forwardOver<T extends ForwardTarget>(s: ServiceForwarding<T>): Forwarder {
  return new Forwarding(s);
}

/** The forwarder of one upstream URL: one target, no retry (a service's: ./upstreams/forwarder.ts). */
export function createForwarder(options: ForwarderOptions): Forwarder {
  const base = new URL(options.upstream);
  const target: ForwardTarget = {
    key: base.host,
    origin: base.origin,
    authority: base.host,
    basePath: base.pathname === '/' ? '' : base.pathname.replace(/\/$/, ''),
    outstanding: 0,
  };
  const { timeoutMs } = options;
  return forwardOver({
    service: 'upstream',
    targets: { pick: () => target, report: () => {} },
    pools: new TargetPools({ maxSockets: options.maxSockets, connectTimeoutMs: timeoutMs, client: options.client }),
    budget: new RetryBudget(0, 0),
    events: null,
    retries: 0,
    timeoutMs,
    headMs: timeoutMs,
    idleMs: timeoutMs,
    connectMs: timeoutMs,
    preserveHost: true,
    ownCors: options.ownCors === true,
    observe: options.observe,
  });
}

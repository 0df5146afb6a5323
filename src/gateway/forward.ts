// Forwarding over an undici Pool (keep-alive connections to the upstream), through its lowest-level
// `dispatch` API: no stream or promise per request, and the response head arrives as raw fields that
// are copied once (the gateway's CPU per request went from 165 to 128 µs with it; bench/RESULTS.md,
// "2026-11-23: the forwarding path, per commit"). The request target is sent exactly as it was
// authorized and signed (no URL parser re-serialises it), every forwarded request is bounded by
// UPSTREAM_TIMEOUT_MS from the moment it is handed over (waiting for a pooled connection included),
// and the response head is cleaned: hop-by-hop fields and the fields the gateway owns (its rate-limit
// headers, Retry-After, X-Request-Id) never come from the upstream.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
// The Pool's own file, not undici's index (src/gateway/undici-pool.d.ts).
import Pool from 'undici/lib/dispatcher/pool.js';
import { headerNameToString } from 'undici/lib/core/util.js';
import { connectionOptions, type ResponseFields } from './fields.js';

export type UpstreamFailure = 'bad_gateway' | 'gateway_timeout';

/** Request fields as a flat list, name then value (a value of several is an array), in the order sent. */
export type FieldList = (string | string[])[];

export interface UpstreamRequest {
  method: string;
  /** Origin-form target: path and query exactly as authorized and signed. */
  target: string;
  /** A flat list is handed to undici as it is; an object is walked by its keys first. */
  headers: FieldList | OutgoingHttpHeaders;
  body: Buffer | null;
  /** The gateway's own response fields: the upstream's are appended and all written in one writeHead. */
  head: ResponseFields;
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
}

/** Response fields that describe one connection (RFC 9110 section 7.6.1) or that only the gateway may set. */
const RESPONSE_DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'x-request-id',
  'ratelimit',
  'ratelimit-policy',
]);

/** Copy the upstream's response fields the client may see (raw name/value pairs, as undici hands them). */
function copyResponseHeaders(raw: Buffer[], status: number, head: ResponseFields, ownCors: boolean): void {
  let named: Set<string> | null = null;
  const names: string[] = new Array(raw.length >> 1);
  for (let i = 0; i < raw.length; i += 2) {
    // A known name is read from undici's table of lower-cased names, without a string made and lowered.
    const name = (names[i >> 1] = headerNameToString(raw[i]));
    if (name === 'connection') named = connectionOptions(raw[i + 1].toString('latin1'));
  }
  let vary: string | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = names[i >> 1];
    if (RESPONSE_DROPPED.has(name) || name.startsWith('x-ratelimit-') || named?.has(name)) continue;
    // Retry-After belongs to the gateway's own 429s; an upstream's 503 may still say when it is back.
    if (name === 'retry-after' && status !== 503) continue;
    if (ownCors && name.startsWith('access-control-')) continue;
    const value = raw[i + 1].toString('latin1');
    if (ownCors && name === 'vary') {
      vary = vary === null ? value : `${vary}, ${value}`;
      continue;
    }
    head.push(name, value);
  }
  // CORS's `Vary: Origin` was set on the response (src/gateway/cors.ts); this list's value replaces it.
  if (vary !== null) head.push('vary', `Origin, ${vary}`);
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

/**
 * The forwarder's exchanges in the order their time runs out, under one timer. Every exchange of a
 * forwarder has the same bound and each restart sets it from now, so an exchange restarted moves to
 * the tail and the head is always the first due. A Node timer per exchange, restarted at the head and
 * at every chunk, cost about 1 µs a request (a Timeout object, the libuv clock read on each restart);
 * here a restart is a clock read and two links. An exchange removed is unlinked both ways and forgets
 * its neighbours (src/ops/live-list.ts says why that matters to the young generation).
 */
class Deadlines {
  private head: Exchange | null = null;
  private tail: Exchange | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly ms: number) {}

  /** (Re)starts the bound of `x` from `now` (performance.now()). */
  restart(x: Exchange, now: number): void {
    x.deadline = now + this.ms;
    if (x !== this.tail) {
      if (x.queued) this.unlink(x);
      x.prev = this.tail;
      if (this.tail) this.tail.next = x;
      else this.head = x;
      this.tail = x;
      x.queued = true;
    }
    this.timer ??= setTimeout(this.expire, this.ms);
  }

  remove(x: Exchange): void {
    if (!x.queued) return;
    this.unlink(x);
    if (this.head === null && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private unlink(x: Exchange): void {
    if (x.prev) x.prev.next = x.next;
    else this.head = x.next;
    if (x.next) x.next.prev = x.prev;
    else this.tail = x.prev;
    x.prev = x.next = null;
    x.queued = false;
  }

  private readonly expire = () => {
    this.timer = null;
    const now = performance.now();
    // Within a millisecond of its bound counts as due: Node's own timers keep milliseconds of the loop's clock.
    while (this.head && this.head.deadline - now < 1) {
      const x = this.head;
      this.unlink(x);
      x.timedOut();
    }
    // A restart during the loop may have set a timer for a full bound; the head may be due sooner.
    if (this.timer) clearTimeout(this.timer);
    this.timer = this.head ? setTimeout(this.expire, Math.ceil(this.head.deadline - now)) : null;
  };
}

/**
 * One forwarded request: undici's dispatch handler. It may be aborted (timeout, client gone) before
 * undici hands it a connection; the abort is then applied as soon as it does.
 */
class Exchange implements Dispatcher.DispatchHandlers {
  private abortUpstream: ((err: Error) => void) | null = null;
  private reason: Error | null = null;
  private finished = false;
  private readonly started = performance.now();
  private resumeUpstream: (() => void) | null = null;
  private waitsForDrain = false;
  /** Its place in the forwarder's Deadlines. */
  deadline = 0;
  queued = false;
  prev: Exchange | null = null;
  next: Exchange | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly head: ResponseFields,
    private readonly options: ForwarderOptions,
    private readonly deadlines: Deadlines,
    private readonly onFail: (kind: UpstreamFailure) => void,
    private done: (() => void) | undefined,
  ) {
    // Bounded from the moment it is handed over: a queued request waits for a connection inside this.
    // After the head the same bound applies to the silence between body chunks (restarted on each).
    deadlines.restart(this, this.started);
    res.on('close', this.onClientClose);
  }

  timedOut(): void {
    this.abort(new UpstreamTimeout('upstream timeout'));
  }

  /** The client went away: the upstream need not finish the work for nobody. */
  private readonly onClientClose = () => {
    if (!this.res.writableFinished) this.abort(new Error('client closed'));
    this.end();
  };

  /** Restarts the bound; a finished exchange has none (no longer in the Deadlines). */
  private restart(now: number): void {
    if (!this.finished) this.deadlines.restart(this, now);
  }

  private drained(): void {
    // The client took what was written: its pace, not the upstream's silence, held the body up.
    this.restart(performance.now());
    this.resumeUpstream?.();
  }

  private abort(err: Error): void {
    if (this.reason) return;
    this.reason = err;
    if (this.abortUpstream) return this.abortUpstream(err);
    // Still queued: answer now; undici cancels it when it gets to it (onConnect), and the error it
    // then reports finds this exchange finished.
    this.onError(err);
  }

  private end(): void {
    if (this.finished) return;
    this.finished = true;
    this.deadlines.remove(this);
    this.release();
  }

  /** `done`, once: at the answer's head (the upstream took the body; undici sends nothing again after it) or at the end. */
  private release(): void {
    const done = this.done;
    this.done = undefined;
    done?.();
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.reason) return abort(this.reason);
    this.abortUpstream = abort;
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void, statusText: string): boolean {
    if (statusCode < 200) return true; // an interim answer (102, 103): the final one follows
    const now = performance.now();
    this.restart(now);
    const { res, options } = this;
    if (res.headersSent || res.destroyed) {
      // Answered meanwhile (the drain's deadline) or the client is gone: nothing to relay, and that
      // answer is left to finish (finished first, so the abort's error does not destroy it).
      this.end();
      this.abort(new Error('answered meanwhile'));
      return false;
    }
    this.release();
    options.observe?.((now - this.started) / 1000);
    copyResponseHeaders(raw, statusCode, this.head, options.ownCors === true);
    res.writeHead(statusCode, statusText || undefined, this.head);
    this.resumeUpstream = resume;
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.restart(performance.now());
    // false pauses the upstream until the client has taken what was written ('drain').
    if (this.res.write(chunk)) return true;
    // Listened to from the first time it is needed: most answers never fill the socket's buffer.
    if (!this.waitsForDrain) {
      this.waitsForDrain = true;
      this.res.on('drain', () => this.drained());
    }
    return false;
  }

  onComplete(): void {
    this.res.end();
    this.end();
  }

  onError(err: Error): void {
    if (this.finished) return; // answered already (the timeout while queued, the client gone)
    const { res } = this;
    if (res.headersSent || res.destroyed) {
      // A reset after the head: the status line is gone, so the only clean answer is to close.
      if (!res.writableFinished) res.destroy();
    } else {
      const code = (err as NodeJS.ErrnoException).code;
      this.onFail(code !== undefined && TIMEOUT_CODES.has(code) ? 'gateway_timeout' : 'bad_gateway');
    }
    this.end();
  }
}

export function createForwarder(options: ForwarderOptions): Forwarder {
  const base = new URL(options.upstream);
  const pool = new Pool(base.origin, {
    connections: options.maxSockets,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
    // The Deadlines bound the head and the silences of the body; undici's own (pooled timers, swept
    // every half second) would only repeat it.
    headersTimeout: 0,
    bodyTimeout: 0,
    connectTimeout: options.timeoutMs,
  });
  const basePath = base.pathname === '/' ? '' : base.pathname.replace(/\/$/, '');
  const deadlines = new Deadlines(options.timeoutMs);

  return {
    forward(request, res, onFail, done) {
      const exchange = new Exchange(res, request.head, options, deadlines, onFail, done);
      pool.dispatch(
        {
          origin: base.origin,
          method: request.method as Dispatcher.HttpMethod,
          path: basePath + request.target,
          headers: request.headers as Record<string, string | string[]> | string[],
          body: request.body,
        },
        exchange,
      );
    },
    close() {
      deadlines.stop();
      return pool.destroy();
    },
  };
}

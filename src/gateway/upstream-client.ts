// Forwarding over an undici Pool (keep-alive connections to the upstream), through its lowest-level
// `dispatch` API: no stream or promise per request, and the response head arrives as raw fields that
// are copied once (the gateway's CPU per request went from 165 to 128 µs with it; bench/RESULTS.md,
// "2026-11-23: the forwarding path, per commit"). The request target is sent exactly as it was
// authorized and signed (no URL parser re-serialises it), every forwarded request is bounded by
// UPSTREAM_TIMEOUT_MS from the moment it is handed over (waiting for a pooled connection included),
// and the response head is cleaned (./response-head.ts).
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
// The Pool's own file, not undici's index: some 10 MB less RSS (src/gateway/undici-pool.d.ts).
import Pool from 'undici/lib/dispatcher/pool.js';
import type { ResponseFields } from './fields.js';
import { Deadlines } from './deadlines.js';
import { copyResponseHeaders } from './response-head.js';

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
    private readonly deadlines: Deadlines<Exchange>,
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
  const deadlines = new Deadlines<Exchange>(options.timeoutMs);

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

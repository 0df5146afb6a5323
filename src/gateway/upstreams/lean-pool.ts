// A lean HTTP/1.1 client to one target origin (UPSTREAM_CLIENT=lean, the default), speaking the part of undici's
// dispatch contract the forwarder uses (../upstream-client.ts): a request's head written as one string
// with its body, its answer read by node's own llhttp parser (the `HTTPParser` node:http's client is
// built on), keep-alive connections reused one request at a time. It keeps undici's observable rules,
// so the forwarder's deadlines, retries and failure answers stay one code: onConnect when a request
// has a connection (a failure before it is a connect failure), undici's error codes for a pool closed
// (UND_ERR_CLOSED), destroyed (UND_ERR_DESTROYED), a request it will not send (UND_ERR_INVALID_ARG)
// and a connect timeout (UND_ERR_CONNECT_TIMEOUT), and undici's request fields (Host when none is
// given, Content-Length from the body, `connection: keep-alive`). A connection is reused only after
// an answer read to its end that did not ask to close; an abort, an error or a body left unread closes
// it. An idle connection is closed before the upstream's own keep-alive bound (its Keep-Alive timeout,
// less a margin, as undici does), so a request is rarely written to a connection the upstream is closing.
import { createRequire } from 'node:module';
import net from 'node:net';
import tls from 'node:tls';
import type { Dispatcher } from 'undici';

/** What node's HTTPParser is to this module (node:_http_common has no published types). */
interface Parser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  execute(data: Buffer): number | ParseError;
  finish(): ParseError | undefined;
  close(): void;
  [callback: number]: unknown;
}
interface ParseError extends Error {
  code: string;
}
interface ParserClass {
  new (): Parser;
  RESPONSE: number;
  kOnMessageBegin: number;
  kOnHeaders: number;
  kOnHeadersComplete: number;
  kOnBody: number;
  kOnMessageComplete: number;
}

/**
 * Node's parser, or null on a runtime without it (`_http_common` is node:http's own module, not a
 * published API: node 20, 22 and 24 have it). Through require: a bundler's or test runner's list of
 * built-in modules may not name node's internal ones.
 */
const HTTP_PARSER: ParserClass | null = (() => {
  try {
    const { HTTPParser } = createRequire(import.meta.url)('_http_common') as { HTTPParser?: ParserClass };
    return typeof HTTPParser === 'function' && typeof HTTPParser.kOnHeadersComplete === 'number' ? HTTPParser : null;
  } catch {
    return null;
  }
})();
/** Whether this runtime can run the lean client (else the pools are undici's: ./pools.ts). */
export const leanClientAvailable = HTTP_PARSER !== null;
const HTTPParser = HTTP_PARSER as ParserClass;

/** The handler callbacks the forwarder implements: undici's Dispatcher.DispatchHandlers, and onRequestSent, which undici calls but its types omit. */
type Handler = Dispatcher.DispatchHandlers & { onRequestSent?(): void };

export interface LeanPoolOptions {
  /** Connections at most; further requests wait for one. */
  connections: number;
  /** Bound on a connection's TCP (and TLS) set-up. */
  connectTimeout: number;
  /** An idle connection is closed after this, or sooner when the upstream's Keep-Alive says so. */
  keepAliveTimeout: number;
  /** The name TLS asks for (SNI, and the certificate checked against it); absent: the origin's host when it is a name. */
  servername?: string | null;
}

/** An error with undici's code for the same cause, which the forwarder maps to its answer. */
class LeanError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** undici's margin under the upstream's announced keep-alive timeout. */
const KEEP_ALIVE_MARGIN_MS = 2_000;
/** A field value undici would refuse: a control character other than tab (CR and LF above all). */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
const INVALID_NAME = /[^!#$%&'*+\-.^_`|~0-9A-Za-z]/;
/** Methods whose request carries a body, so an empty one is announced (as undici does). */
const PAYLOAD_METHODS = new Set(['POST', 'PUT', 'PATCH', 'QUERY']);
const NO_TRAILERS: string[] = [];

/** One request on the pool: waiting for a connection, then on one. */
class Pending {
  constructor(
    readonly head: string,
    readonly body: Buffer | null,
    readonly handler: Handler,
    readonly method: string,
  ) {}
}

/** One connection and its parser; `request` is the one it carries (null: idle or connecting). */
class Conn {
  request: Pending | null = null;
  connected = false;
  /** The answer's head was handed over; the interim answers (1xx) before it are not. */
  relayed = false;
  /** The final answer was read to its end: the connection is free once the parser returns. */
  complete = false;
  /** The request's head was written: an abort from now closes the connection. */
  written = false;
  /** The connection may not carry another request. */
  spent = false;
  paused = false;
  idleSince = 0;
  idleMs: number;
  headers: string[] | null = null;
  connectTimer: NodeJS.Timeout | null = null;
  readonly parser: Parser;

  constructor(
    readonly pool: LeanPool,
    readonly socket: net.Socket,
  ) {
    this.idleMs = pool.keepAliveMs;
    const parser = (this.parser = new HTTPParser());
    parser.initialize(HTTPParser.RESPONSE, {}, 0, 0);
    // An answer begun with no request on the connection (bytes after the last one): not reused.
    parser[HTTPParser.kOnMessageBegin] = () => {
      if (this.request === null) this.spent = true;
    };
    parser[HTTPParser.kOnHeaders] = (headers: string[]) => this.onPartialHeaders(headers);
    parser[HTTPParser.kOnHeadersComplete] = this.onHeadersComplete;
    parser[HTTPParser.kOnBody] = (chunk: Buffer) => this.onBody(chunk);
    parser[HTTPParser.kOnMessageComplete] = () => this.onMessageComplete();
  }

  /** Bytes from the upstream: parsed now, the callbacks below run inside. */
  read(data: Buffer): void {
    if (this.request === null) {
      // Nothing was asked: whatever this is, the connection cannot be trusted with the next request.
      this.socket.destroy();
      return;
    }
    const r = this.parser.execute(data);
    if (typeof r !== 'number') this.fail(new LeanError(`upstream answer unreadable: ${r.code}`, r.code));
    // Freed only now: the next request's answer must not be read from what this read still held.
    if (this.complete) {
      this.complete = false;
      this.pool.released(this);
    }
  }

  /** The upstream closed its side: an answer read until the close ends here, any other is cut. */
  ended(): void {
    this.spent = true;
    if (this.request !== null) {
      const r = this.parser.finish();
      if (r !== undefined) this.fail(new LeanError(`upstream answer unreadable: ${r.code}`, r.code));
      if (this.request !== null) this.fail(new LeanError('other side closed', 'UND_ERR_SOCKET'));
    }
    this.socket.destroy();
  }

  private onPartialHeaders(headers: string[]): void {
    // More fields than the parser hands over at once, or a head split over reads: gathered until complete.
    this.headers = this.headers === null ? headers : this.headers.concat(headers);
  }

  private readonly onHeadersComplete = (
    _major: number,
    _minor: number,
    fields: string[] | undefined,
    _method: unknown,
    _url: unknown,
    status: number,
    statusText: string,
    upgrade: boolean,
    keepAlive: boolean,
  ): number => {
    const r = this.request;
    let raw = fields;
    if (this.headers !== null) {
      raw = fields === undefined ? this.headers : this.headers.concat(fields);
      this.headers = null;
    }
    if (r === null) return 0;
    if (status < 200 && !upgrade) return 0; // an interim answer (102, 103): the final one follows
    if (upgrade) {
      this.fail(new LeanError('upstream switched protocols unasked', 'UND_ERR_SOCKET'));
      return 0;
    }
    if (!keepAlive) this.spent = true;
    else this.keepAliveHint(raw!);
    this.relayed = true;
    // The handler's types say Buffers; its one caller (../response-head.ts) reads strings the same.
    // The resume handed over is this request's: a late one (its client drained after the end) must not
    // undo the pause of the next request on the connection.
    const resume = () => {
      if (this.request === r) this.resume();
    };
    if (!r.handler.onHeaders!(status, raw as unknown as Buffer[], resume, statusText)) this.pause();
    // A HEAD's answer announces a body it does not carry.
    return r.method === 'HEAD' ? 1 : 0;
  };

  private onBody(chunk: Buffer): void {
    const r = this.request;
    if (r === null || !this.relayed) return;
    if (!r.handler.onData!(chunk)) this.pause();
  }

  private onMessageComplete(): void {
    const r = this.request;
    if (r === null) return;
    if (!this.relayed) return; // the end of an interim answer
    this.complete = true;
    this.request = null;
    this.relayed = false;
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    r.handler.onComplete!(NO_TRAILERS);
  }

  private pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  private resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
  }

  /** The upstream's `Keep-Alive: timeout=N`: the connection idles at most that, less undici's margin. */
  private keepAliveHint(raw: string[]): void {
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i];
      if (name.length !== 10 || name.toLowerCase() !== 'keep-alive') continue;
      const m = /timeout=(\d+)/i.exec(raw[i + 1]);
      if (m !== null) this.idleMs = Math.min(this.pool.keepAliveMs, Number(m[1]) * 1000 - KEEP_ALIVE_MARGIN_MS);
      return;
    }
  }

  /** The request failed: the connection goes with it, and the handler hears `err` (once). */
  fail(err: Error): void {
    const r = this.request;
    this.request = null;
    this.spent = true;
    this.socket.destroy();
    if (r !== null) r.handler.onError!(err);
  }

  /** The request's abort, handed over in onConnect: before its head is written, the connection stays usable. */
  abortOf(r: Pending): (err?: Error) => void {
    return (err) => {
      if (this.request !== r) return;
      const e = err ?? new LeanError('request aborted', 'UND_ERR_ABORTED');
      if (this.written) return this.fail(e);
      this.request = null;
      r.handler.onError!(e);
    };
  }
}

/** What the walk over a request's fields found, besides their lines (one request at a time). */
const seen = { host: false, length: -1 };
/** Fields that describe the connection, which undici refuses to take from the caller. */
const CONNECTION_FIELDS = new Set(['connection', 'keep-alive', 'upgrade', 'expect', 'transfer-encoding']);

/** undici's request head: the fields as given (a flat list or an object), Host, Content-Length and keep-alive added as it adds them. */
function requestHead(opts: Dispatcher.DispatchOptions, host: string): string {
  const method = opts.method;
  const body = opts.body as Buffer | null | undefined;
  let head = `${method} ${opts.path} HTTP/1.1\r\n`;
  seen.host = false;
  seen.length = -1;
  const h = opts.headers;
  if (Array.isArray(h)) {
    for (let i = 0; i < h.length; i += 2) head += fieldLine(h[i] as string, h[i + 1]);
  } else if (h != null) {
    for (const name in h) head += fieldLine(name, (h as Record<string, unknown>)[name]);
  }
  const size = body == null ? 0 : body.length;
  if (seen.length >= 0 && seen.length !== size) {
    throw new LeanError('Content-Length does not match the body', 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH');
  }
  if (!seen.host) head += `host: ${host}\r\n`;
  if (seen.length < 0 && (size > 0 || PAYLOAD_METHODS.has(method))) head += `content-length: ${size}\r\n`;
  return head + 'connection: keep-alive\r\n\r\n';
}

function fieldLine(name: string, value: unknown): string {
  if (value === undefined) return '';
  if (Array.isArray(value)) {
    let lines = '';
    for (const v of value) lines += fieldLine(name, v);
    return lines;
  }
  const v = typeof value === 'string' ? value : String(value);
  if (INVALID_VALUE.test(v) || INVALID_NAME.test(name)) throw invalidField(name);
  // Only names of these lengths can be one undici looks at: the others are never lowered.
  switch (name.length) {
    case 4:
      if (name.toLowerCase() === 'host') seen.host = true;
      break;
    case 14:
      if (name.toLowerCase() === 'content-length') {
        seen.length = Number(v);
        if (!Number.isSafeInteger(seen.length) || seen.length < 0) throw invalidField(name);
      }
      break;
    case 6:
    case 7:
    case 10:
    case 17:
      if (CONNECTION_FIELDS.has(name.toLowerCase())) throw invalidField(name);
  }
  return `${name}: ${v}\r\n`;
}

function invalidField(name: string): LeanError {
  return new LeanError(`invalid ${name} header`, 'UND_ERR_INVALID_ARG');
}

export class LeanPool {
  readonly keepAliveMs: number;
  private readonly idle: Conn[] = [];
  private readonly waiting: Pending[] = [];
  /** Connections open or opening. */
  private readonly conns = new Set<Conn>();
  private connecting = 0;
  private closed = false;
  private destroyed = false;
  private drained: (() => void) | null = null;
  private readonly sweep: NodeJS.Timeout;
  private readonly host: string;
  private readonly port: number;
  private readonly secure: boolean;
  private readonly authority: string;

  constructor(
    origin: string,
    private readonly options: LeanPoolOptions,
  ) {
    const u = new URL(origin);
    this.secure = u.protocol === 'https:';
    this.host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    this.port = u.port === '' ? (this.secure ? 443 : 80) : Number(u.port);
    this.authority = u.host;
    this.keepAliveMs = options.keepAliveTimeout;
    // Idle connections past their bound are closed here, once a second, rather than by a timer each.
    this.sweep = setInterval(() => this.closeStale(performance.now()), 1_000).unref();
  }

  dispatch(opts: Dispatcher.DispatchOptions, handler: Handler): boolean {
    if (this.closed) {
      const code = this.destroyed ? 'UND_ERR_DESTROYED' : 'UND_ERR_CLOSED';
      handler.onError!(new LeanError('the pool is closed', code));
      return false;
    }
    let head: string;
    try {
      head = requestHead(opts, this.authority);
    } catch (err) {
      handler.onError!(err as Error);
      return false;
    }
    const r = new Pending(head, (opts.body as Buffer | null | undefined) ?? null, handler, opts.method);
    const conn = this.take();
    if (conn !== null) this.send(conn, r);
    else {
      this.waiting.push(r);
      if (this.connecting < this.waiting.length && this.conns.size < this.options.connections) this.connect();
    }
    return true;
  }

  /** Requests are finished, then the connections closed; new requests are refused from now. */
  close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweep);
    for (const c of this.idle.splice(0)) c.socket.destroy();
    if (this.conns.size === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }

  /** Every request still waiting or in flight fails, every connection closes. */
  destroy(): Promise<void> {
    this.closed = this.destroyed = true;
    clearInterval(this.sweep);
    const err = () => new LeanError('the pool was destroyed', 'UND_ERR_DESTROYED');
    for (const r of this.waiting.splice(0)) r.handler.onError!(err());
    for (const c of [...this.conns]) c.fail(err());
    this.idle.length = 0;
    this.settle();
    return Promise.resolve();
  }

  /** The most recently used idle connection still within its keep-alive bound. */
  private take(): Conn | null {
    const idle = this.idle;
    if (idle.length === 0) return null;
    const now = performance.now();
    let c = idle.pop();
    while (c !== undefined && now - c.idleSince >= c.idleMs) {
      c.socket.destroy();
      c = idle.pop();
    }
    return c ?? null;
  }

  private connect(): void {
    const socket = this.secure
      ? tls.connect({
          host: this.host,
          port: this.port,
          servername: this.options.servername ?? (net.isIP(this.host) ? undefined : this.host),
        })
      : net.connect({ host: this.host, port: this.port });
    const conn = new Conn(this, socket);
    this.conns.add(conn);
    this.connecting++;
    conn.connectTimer = setTimeout(() => {
      socket.destroy(new LeanError('connect timeout', 'UND_ERR_CONNECT_TIMEOUT'));
    }, this.options.connectTimeout);
    socket.setNoDelay(true);
    socket.on(this.secure ? 'secureConnect' : 'connect', () => {
      clearTimeout(conn.connectTimer!);
      conn.connectTimer = null;
      conn.connected = true;
      this.connecting--;
      socket.setKeepAlive(true, 60_000);
      this.released(conn);
    });
    socket.on('data', (data: Buffer) => conn.read(data));
    socket.on('end', () => conn.ended());
    socket.on('error', (err) => {
      if (conn.connected) conn.fail(withCode(err, 'UND_ERR_SOCKET'));
      else this.connectFailed(conn, err);
    });
    socket.on('close', () => this.gone(conn));
  }

  /** A connection that never opened: the oldest request waiting hears why (as one of undici's would). */
  private connectFailed(conn: Conn, err: Error): void {
    if (conn.connectTimer !== null) {
      clearTimeout(conn.connectTimer);
      conn.connectTimer = null;
      this.connecting--;
    }
    conn.spent = true;
    this.conns.delete(conn);
    const r = this.waiting.shift();
    if (r !== undefined) r.handler.onError!(err);
    this.refill();
    this.settle();
  }

  private gone(conn: Conn): void {
    if (!conn.connected) {
      if (this.conns.has(conn)) this.connectFailed(conn, new LeanError('connection closed', 'UND_ERR_SOCKET'));
      return;
    }
    conn.parser.close();
    if (conn.request !== null) conn.fail(new LeanError('other side closed', 'UND_ERR_SOCKET'));
    this.conns.delete(conn);
    const at = this.idle.indexOf(conn);
    if (at >= 0) this.idle.splice(at, 1);
    this.refill();
    this.settle();
  }

  /** A connection free again (opened, or its answer read): the next request waiting, or idle. */
  released(conn: Conn): void {
    if (conn.spent || conn.socket.destroyed) {
      conn.socket.destroy();
      return;
    }
    const r = this.waiting.shift();
    if (r !== undefined) return this.send(conn, r);
    if (this.closed) {
      conn.socket.destroy();
      return;
    }
    conn.idleSince = performance.now();
    this.idle.push(conn);
  }

  private send(conn: Conn, r: Pending): void {
    conn.request = r;
    conn.complete = false;
    conn.relayed = false;
    conn.written = false;
    r.handler.onConnect!(conn.abortOf(r));
    // Abandoned before a byte was written: the connection is as good as before.
    if (conn.request !== r) return this.released(conn);
    conn.written = true;
    const { head, body } = r;
    if (body === null || body.length === 0) conn.socket.write(head, 'latin1');
    else if (body.length <= 16_384) {
      // One write, one packet: the head and a small body copied together.
      const out = Buffer.allocUnsafe(head.length + body.length);
      out.write(head, 0, 'latin1');
      body.copy(out, head.length);
      conn.socket.write(out);
    } else {
      conn.socket.cork();
      conn.socket.write(head, 'latin1');
      conn.socket.write(body);
      process.nextTick(uncork, conn.socket);
    }
    if (conn.request === r) r.handler.onRequestSent?.();
  }

  /** Requests still waiting get connections of their own, within the bound, when none is coming. */
  private refill(): void {
    if (this.destroyed) return;
    const want = Math.min(this.waiting.length - this.connecting, this.options.connections - this.conns.size);
    for (let i = 0; i < want; i++) this.connect();
  }

  private closeStale(now: number): void {
    const idle = this.idle;
    for (let i = idle.length - 1; i >= 0; i--) {
      const c = idle[i];
      if (now - c.idleSince >= c.idleMs) {
        idle.splice(i, 1);
        c.socket.destroy();
      }
    }
  }

  /** A pool closing resolves its close() once nothing is left on it. */
  private settle(): void {
    if (this.drained === null || this.conns.size !== 0 || this.waiting.length !== 0) return;
    const done = this.drained;
    this.drained = null;
    done();
  }
}

function uncork(socket: net.Socket): void {
  socket.uncork();
}

function withCode(err: Error, fallback: string): Error {
  if ((err as NodeJS.ErrnoException).code === undefined) (err as NodeJS.ErrnoException).code = fallback;
  return err;
}

// WebSocket: an `Upgrade: websocket` request goes through the interface's pipeline like any other
// (key, principal, scopes, limits, signed identity), then its connection is passed through to a target
// of the route's service for its life.
//
// What an open tunnel holds, and its bounds. Its client connection stays one of the gateway listener's:
// src/ops/connection-limits.ts counts it against GATEWAY_MAX_CONNECTIONS and its address's
// GATEWAY_MAX_CONNECTIONS_PER_ADDRESS until the tunnel closes (node:http never reads another request on
// it, but the socket is the same one that listener accepted). Its connection to the target comes out
// of the descriptors held back for the upstream side, so the tunnels open at once are bounded too
// (WEBSOCKET_MAX_TUNNELS; by default `defaultTunnelBound`, a quarter of the listener's share): past it
// an upgrade is answered 503 in the interface's envelope. Both connections close together: the end of
// one side is passed on to the other (a half-closed tunnel gets HALF_OPEN_MS to finish), the close or
// failure of either destroys both, and TCP keep-alive finds a peer that vanished without a word.
//
// Revocation: every open tunnel's key is checked again through the access resolver (reading its
// counters, never spending) once its last check is WEBSOCKET_RECHECK_MS old by the gateway's clock;
// the sweep looks every RECHECK_TICK_MS at most. The resolver sees an access change at once (the
// version bump, or the cache evicted by NOTIFY: src/access/cache.ts), and an expiry by the clock, so a
// key revoked, expired or no longer admitted (organization paused, plan without API access, scope or
// route gone) has its tunnels closed within WEBSOCKET_RECHECK_MS + RECHECK_TICK_MS plus one resolver
// round trip: close frame 1008 to the client, 1008 to the target, both connections then closed. A
// re-check the stores cannot answer keeps the tunnel until one can; an invalid key counts one failed
// authentication for the address, as any request with it would. A draining gateway (SIGTERM) refuses
// new upgrades; the open tunnels hold the drain as requests in flight do, and at its deadline each
// gets close frame 1001 both ways.
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { pipeline, type Duplex } from 'node:stream';
import type { GatewayDeps, RequestContext } from './context.js';
import type { FieldList } from './upstream-client.js';
import type { AttemptResult, ServiceUpstream, Target } from './upstreams/types.js';
import { tlsNameOf } from './upstreams/dns.js';
import { stripPrefix } from '../config/services.js';
import { refuse } from './answers.js';
import { copyResponseHeaders } from './response-head.js';
import { policyOf } from './resolver-plan.js';
import { ERROR_CODES } from '../http/errors.js';
import { CLOSE_GOING_AWAY, CLOSE_POLICY, FrameCursor, closeFrame } from './websocket-frames.js';

/** WEBSOCKET_RECHECK_MS's default: a revoked key's tunnels close within about this. */
export const DEFAULT_RECHECK_MS = 5_000;
/** How often the tunnels are looked over for a re-check that is due. */
export const RECHECK_TICK_MS = 1_000;
/** The connection to a target and the answer's head, when the service sets no timeouts of its own. */
const CONNECT_MS = 10_000;
const HEAD_MS = 30_000;
/** After a close frame or one side's close, the other side's last bytes get this long. */
const CLOSE_GRACE_MS = 1_000;
/** One side ended its half: the other has this long to end its own. */
const HALF_OPEN_MS = 30_000;
/** TCP keep-alive probes on both connections of a tunnel start after this much silence. */
const KEEPALIVE_MS = 60_000;

/** The handshake's fields (RFC 6455 section 4.1) that reach the target as the client sent them. */
const HANDSHAKE_FIELDS = [
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-protocol',
  'sec-websocket-extensions',
] as const;

/** An upgrade the listener made: the tunnels it counts, and what it does once the 101 is written. */
interface Host {
  tunnels: Tunnels;
  opened(): void;
}
const hosts = new WeakMap<RequestContext, Host>();

/** Whether `req` asks for a WebSocket (RFC 6455 section 4.1): a GET without a body, Upgrade naming websocket. */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  const upgrade = req.headers.upgrade;
  if (req.method !== 'GET' || !upgrade) return false;
  if (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') return false;
  if (req.headers['transfer-encoding'] !== undefined) return false;
  return upgrade.split(',').some((p) => p.trim().toLowerCase() === 'websocket');
}

/** The open tunnels of one listener: their bound, their re-checks, and their close at the drain. */
export class Tunnels {
  private readonly open = new Map<RequestContext, Tunnel>();
  private opening = 0;
  private sweep: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: GatewayDeps,
    readonly max: number,
    readonly recheckMs: number = DEFAULT_RECHECK_MS,
  ) {}

  /** An upgrade request of this listener; `opened` runs once, when its 101 is written. */
  expect(ctx: RequestContext, opened: () => void): void {
    hosts.set(ctx, { tunnels: this, opened });
  }

  get size(): number {
    return this.open.size;
  }

  isOpen(ctx: RequestContext): boolean {
    return this.open.has(ctx);
  }

  /** Close every open tunnel with `code` (1001 at the drain's deadline). */
  closeAll(code: number, reason: string): void {
    for (const tunnel of this.open.values()) tunnel.close(code, reason);
  }

  /** A place for one more tunnel while it connects; false when the bound is reached. */
  reserve(): boolean {
    if (this.open.size + this.opening >= this.max) return false;
    this.opening++;
    return true;
  }

  release(): void {
    this.opening--;
  }

  add(ctx: RequestContext, tunnel: Tunnel): void {
    this.opening--;
    this.open.set(ctx, tunnel);
    this.sweep ??= setInterval(() => this.recheckDue(), Math.min(this.recheckMs, RECHECK_TICK_MS)).unref();
  }

  remove(ctx: RequestContext): void {
    this.open.delete(ctx);
    if (this.open.size === 0 && this.sweep) {
      clearInterval(this.sweep);
      this.sweep = null;
    }
  }

  private recheckDue(): void {
    const now = this.deps.clock.now();
    for (const tunnel of this.open.values()) if (now - tunnel.checkedAt >= this.recheckMs) void tunnel.recheck(now);
  }
}

/**
 * Called by ./forward-authorized.ts instead of forwarding when `ctx.upgrade` is set: `fields` are the
 * request fields the upstream gets (cleaned, signed identity, request id, forwarding fields), without
 * the hop-by-hop Connection/Upgrade pair, which the tunnel adds. A target that cannot be connected to
 * is reported and another tried (nothing was sent), up to the service's retry attempts; the answer is
 * then a 502 in the interface's envelope, a 504 when the target connected but never answered.
 */
export function tunnelUpgrade(
  deps: GatewayDeps,
  ctx: RequestContext,
  upstream: ServiceUpstream,
  fields: FieldList,
  keyId: number,
): void {
  if (!ctx.upgrade) return refuse(ctx, { code: 'invalid_request', message: 'Not a WebSocket request.' });
  const host = hosts.get(ctx) ?? { tunnels: new Tunnels(deps, Infinity), opened: () => {} };
  if (!host.tunnels.reserve())
    return refuse(ctx, {
      code: 'service_unavailable',
      message: 'The gateway holds as many WebSocket connections as it may; retry shortly.',
      retryAfter: 5,
    });
  const opening = new Opening(deps, ctx, ctx.upgrade, upstream, upstreamFields(ctx, fields), host, keyId);
  opening.next();
}

/** The target's fields: the pipeline's, the handshake's own, and the hop-by-hop pair of an upgrade. */
function upstreamFields(ctx: RequestContext, fields: FieldList): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < fields.length; i += 2) {
    const name = String(fields[i]).toLowerCase();
    // Host is sent per attempt (Opening.hostFor); the pair below is the tunnel's own.
    if (name === 'host' || name === 'connection' || name === 'upgrade') continue;
    seen.add(name);
    const value = fields[i + 1];
    for (const v of Array.isArray(value) ? value : [value]) out.push(name, v);
  }
  for (const name of HANDSHAKE_FIELDS) {
    const value = ctx.req.headers[name];
    if (typeof value === 'string' && !seen.has(name)) out.push(name, value);
  }
  out.push('connection', 'Upgrade', 'upgrade', 'websocket');
  return out;
}

/** The handshake with one target after another, until one answers or none is left to try. */
class Opening {
  private readonly tried = new Set<Target>();
  private triesLeft: number;
  /** The target the service receives, as ./forward-authorized.ts signed it (its `stripPrefix` applied). */
  private readonly target: string;

  constructor(
    private readonly deps: GatewayDeps,
    private readonly ctx: RequestContext,
    private readonly client: { socket: Duplex; head: Buffer },
    private readonly upstream: ServiceUpstream,
    private readonly fields: string[],
    private readonly host: Host,
    private readonly keyId: number,
  ) {
    this.triesLeft = 1 + upstream.config.retries.attempts;
    const strip = upstream.config.stripPrefix;
    this.target = strip === undefined ? ctx.target : stripPrefix(ctx.target, strip);
  }

  /** The client's Host, as every forwarded request of the service sends it, unless it says preserveHost: false. */
  private hostFor(target: Target): string {
    const client = this.ctx.req.headers.host;
    return this.upstream.config.preserveHost && client ? client : target.authority;
  }

  next(): void {
    const target = this.upstream.targets.pick(this.tried);
    if (!target || this.tried.has(target))
      return this.fail(
        'bad_gateway',
        this.tried.size > 0 ? 'The upstream could not be reached.' : 'The service has no target to connect to.',
      );
    this.tried.add(target);
    this.triesLeft--;
    target.outstanding++;
    let req: http.ClientRequest;
    try {
      req = requestTo(target, `${target.basePath}${this.target}`, this.fields, this.hostFor(target));
    } catch {
      // A field node:http will not write: nothing was sent.
      target.outstanding--;
      return this.fail('bad_gateway', 'The upstream could not be reached.');
    }
    this.watch(target, req);
  }

  private watch(target: Target, req: http.ClientRequest): void {
    const timeouts = this.upstream.config.timeouts;
    const socket = this.client.socket;
    let connected = false;
    let settled = false;
    const settle = (result: AttemptResult | null) => {
      settled = true;
      clearTimeout(timer);
      socket.off('close', clientGone);
      if (result) this.upstream.targets.report(target, result);
    };
    const giveUp = (result: AttemptResult) => {
      settle(result);
      req.destroy();
      target.outstanding--;
      if (!connected && this.triesLeft > 0 && !socket.destroyed) return this.next();
      if (result === 'timeout') return this.fail('gateway_timeout', 'The upstream did not answer in time.');
      this.fail('bad_gateway', 'The upstream could not be reached.');
    };
    const clientGone = () => {
      if (settled) return;
      settle(null);
      req.destroy();
      target.outstanding--;
      this.host.tunnels.release();
    };
    let timer = setTimeout(() => giveUp('connect_failure'), timeouts.connectMs ?? CONNECT_MS);
    socket.once('close', clientGone);
    req.once('socket', (s) => {
      s.once(target.origin.startsWith('https:') ? 'secureConnect' : 'connect', () => {
        connected = true;
        clearTimeout(timer);
        if (!settled) timer = setTimeout(() => giveUp('timeout'), timeouts.headMs ?? HEAD_MS);
      });
    });
    req.on('error', () => {
      if (!settled) giveUp(connected ? 'reset' : 'connect_failure');
    });
    req.once('upgrade', (res: IncomingMessage, upSocket: Duplex, upHead: Buffer) => {
      if (settled) return void upSocket.destroy();
      settle('ok');
      this.open(target, res, upSocket, upHead);
    });
    req.once('response', (res: IncomingMessage) => {
      if (settled) return void res.destroy();
      settle((res.statusCode ?? 502) >= 500 ? 'status_5xx' : 'ok');
      this.relay(target, res);
    });
    req.end();
  }

  /** 101: the gateway's fields with the target's, then the bytes both ways for the tunnel's life. */
  private open(target: Target, res: IncomingMessage, upSocket: Duplex, upHead: Buffer): void {
    const { ctx, client } = this;
    if (client.socket.destroyed || ctx.res.headersSent) {
      // Answered meanwhile (the drain's deadline) or gone: the target's side goes too.
      upSocket.destroy();
      target.outstanding--;
      this.host.tunnels.release();
      return;
    }
    copyResponseHeaders(rawFields(res.rawHeaders), 101, ctx.head, this.deps.cors.enabled);
    let head = 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n';
    for (let i = 0; i < ctx.head.length; i += 2) head += `${ctx.head[i]}: ${ctx.head[i + 1]}\r\n`;
    client.socket.write(`${head}\r\n`, 'latin1');
    const tunnels = this.host.tunnels;
    const tunnel = new Tunnel(this.deps, ctx, client.socket, upSocket, this.keyId, () => {
      target.outstanding--;
      tunnels.remove(ctx);
    });
    tunnels.add(ctx, tunnel);
    this.host.opened();
    tunnel.start(upHead, client.head);
  }

  /** Not a 101: the target's answer is the client's, and the connection closes after it. */
  private relay(target: Target, res: IncomingMessage): void {
    this.host.tunnels.release();
    if (this.ctx.res.headersSent || this.client.socket.destroyed) {
      // Answered meanwhile (the drain's deadline) or gone: nothing to relay to.
      res.destroy();
      target.outstanding--;
      return;
    }
    const status = res.statusCode ?? 502;
    copyResponseHeaders(rawFields(res.rawHeaders), status, this.ctx.head, this.deps.cors.enabled);
    this.ctx.res.writeHead(status, this.ctx.head);
    pipeline(res, this.ctx.res, () => {
      target.outstanding--;
    });
  }

  private fail(code: 'bad_gateway' | 'gateway_timeout', message: string): void {
    this.host.tunnels.release();
    this.deps.metrics.upstreamFailure(code);
    refuse(this.ctx, { code, message });
  }
}

/** One handshake to one target: its own connection (never pooled: it becomes the tunnel's). */
function requestTo(target: Target, path: string, fields: string[], host: string): http.ClientRequest {
  const url = new URL(target.origin);
  const tls = url.protocol === 'https:';
  const address = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const options: https.RequestOptions = {
    host: address,
    port: url.port || (tls ? 443 : 80),
    method: 'GET',
    path,
    headers: [...fields, 'host', host],
    agent: false,
  };
  // The TLS server name is the configured host's, not the address it resolved to (never an IP literal).
  const name = tls ? tlsNameOf(target.authority) : undefined;
  if (name !== undefined) options.servername = name;
  return tls ? https.request(options) : http.request(options);
}

/** node:http's raw fields as the Buffers ./response-head.ts reads. */
function rawFields(raw: string[]): Buffer[] {
  return raw.map((s) => Buffer.from(s, 'latin1'));
}

/** An open tunnel: the bytes both ways, its close, and its key's re-checks. */
class Tunnel {
  private readonly toClient = new FrameCursor();
  private readonly toUpstream = new FrameCursor();
  private closing: { code: number; reason: string } | null = null;
  private readonly said = new Set<Duplex>();
  private closed = 0;
  private ended = false;
  private checking = false;
  private timer: NodeJS.Timeout | null = null;
  checkedAt: number;

  constructor(
    private readonly deps: GatewayDeps,
    private readonly ctx: RequestContext,
    private readonly client: Duplex,
    private readonly upstream: Duplex,
    private readonly keyId: number,
    private readonly onEnd: () => void,
  ) {
    this.checkedAt = deps.clock.now();
  }

  start(fromUpstream: Buffer, fromClient: Buffer): void {
    for (const [side, other] of [
      [this.client, this.upstream],
      [this.upstream, this.client],
    ] as const) {
      // An error is followed by 'close', which ends the tunnel; it is never thrown.
      side.on('error', () => {});
      side.once('end', () => this.halfClosed(other));
      side.once('close', () => this.sideClosed(other));
      if (side instanceof net.Socket) {
        side.setKeepAlive(true, KEEPALIVE_MS);
        side.setNoDelay(true);
      }
    }
    if (fromUpstream.length > 0) this.carry(fromUpstream, this.upstream, this.client, this.toClient, false);
    if (fromClient.length > 0) this.carry(fromClient, this.client, this.upstream, this.toUpstream, true);
    this.relay(this.upstream, this.client, this.toClient, false);
    this.relay(this.client, this.upstream, this.toUpstream, true);
  }

  /**
   * Close with a frame of the gateway's own to each side, each written between two frames of what that
   * side is being sent (the one in flight is finished first), then both connections; within
   * CLOSE_GRACE_MS either way.
   */
  close(code: number, reason: string): void {
    if (this.closing || this.ended) return;
    this.closing = { code, reason };
    if (this.toClient.atBoundary) this.sayClose(this.client, false);
    if (this.toUpstream.atBoundary) this.sayClose(this.upstream, true);
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.end(), CLOSE_GRACE_MS);
  }

  /** Whether the key still admits this request; closes the tunnel with 1008 when it does not. */
  async recheck(now: number): Promise<void> {
    if (this.checking || this.closing || this.ended) return;
    this.checking = true;
    this.checkedAt = now;
    try {
      const refused = await refusalNow(this.deps, this.ctx, this.keyId);
      if (refused === null || this.ended) return;
      this.deps.log.info(
        { requestId: this.ctx.requestId, keyId: this.keyId, reason: refused },
        'websocket closed: its key is no longer admitted',
      );
      this.close(CLOSE_POLICY, refused);
    } catch {
      // The access store or the limiter is down: the tunnel stays, and is checked again at the next tick.
    } finally {
      this.checking = false;
    }
  }

  private relay(from: Duplex, to: Duplex, cursor: FrameCursor, masked: boolean): void {
    from.on('data', (chunk: Buffer) => this.carry(chunk, from, to, cursor, masked));
    to.on('drain', () => from.resume());
  }

  private carry(chunk: Buffer, from: Duplex, to: Duplex, cursor: FrameCursor, masked: boolean): void {
    // Past the gateway's close frame nothing more is sent that way.
    if (this.said.has(to)) return;
    if (!this.closing) {
      cursor.advance(chunk);
      if (!to.write(chunk)) from.pause();
      return;
    }
    const n = cursor.advance(chunk, true);
    if (n > 0) to.write(n === chunk.length ? chunk : chunk.subarray(0, n));
    if (cursor.atBoundary) this.sayClose(to, masked);
  }

  private sayClose(to: Duplex, masked: boolean): void {
    if (this.said.has(to) || !this.closing || to.destroyed) return;
    this.said.add(to);
    to.end(closeFrame(this.closing.code, this.closing.reason, masked));
  }

  /** One side sent its FIN: passed on, and the other side has HALF_OPEN_MS to end its half too. */
  private halfClosed(other: Duplex): void {
    if (!other.writableEnded) other.end();
    this.timer ??= setTimeout(() => this.end(), HALF_OPEN_MS);
  }

  /** One side closed: what the other still has queued is written, then it closes too. */
  private sideClosed(other: Duplex): void {
    if (++this.closed === 2) return this.end();
    if (!other.writableEnded) other.end();
    if (other.writableFinished) other.destroy();
    else other.once('finish', () => other.destroy());
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.end(), CLOSE_GRACE_MS);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.timer) clearTimeout(this.timer);
    this.client.destroy();
    this.upstream.destroy();
    this.onEnd();
  }
}

/**
 * The pipeline's steps 3 to 10 again for an open tunnel's request, its counters read and not spent (the
 * request spent its token when it was admitted): null while it is still admitted, else why not. A
 * cooldown of the address says nothing of the key, so it keeps the tunnel.
 */
async function refusalNow(deps: GatewayDeps, ctx: RequestContext, keyId: number): Promise<string | null> {
  const { iface } = ctx;
  const secret = iface.readKey(ctx.req);
  if (!secret) return 'The API key is missing.';
  const policy = policyOf(deps, ctx);
  const access = await deps.access.resolve(secret, iface.spec.keyTypes, ctx.ip, (principal) => {
    const decision = iface.decide(principal, ctx, policy);
    const counters = decision.counters;
    return { decision, counters: { peek: 'spend' in counters ? counters.spend : counters.peek } };
  });
  if (access.kind === 'cooldown') return null;
  if (access.kind === 'invalid') return ERROR_CODES['150002'].message;
  if (access.principal.keyId !== keyId) return ERROR_CODES['150002'].message;
  const { decision } = access;
  if (decision.kind === 'admit') return null;
  if (decision.kind === 'refuse') return decision.refusal.message ?? ERROR_CODES[decision.refusal.code].message;
  return 'The route is no longer forwarded.';
}

/** The close the drain's deadline gives every open tunnel. */
export const DRAIN_CLOSE = { code: CLOSE_GOING_AWAY, reason: 'The gateway is shutting down.' } as const;

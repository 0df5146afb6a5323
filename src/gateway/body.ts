// Request bodies are read only once a request is authorized (the guards decide from the headers), and
// reading is bounded four ways: the size of one body (BODY_LIMIT_BYTES, then 413), the time it may
// take (BODY_TIMEOUT_MS, then 408), the bytes held across every request at once
// (BODY_BUFFER_MAX_BYTES, then 503), and within that the bytes held by one key and by one client
// address (BODY_BUFFER_KEY_MAX_BYTES, BODY_BUFFER_ADDRESS_MAX_BYTES, then 503): a client without a
// key cannot make the gateway hold anything, and one key or one address cannot take the room every
// other client's bodies need. A refused request's connection is closed only after a bounded while of
// reading and discarding what the client still sends (`lingerAfterAnswer`), so that it reads its answer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { refusedInstead, type Decision } from './decisions.js';

export type BodyRefusal =
  | { code: 'payload_too_large'; message: string }
  | { code: 'request_timeout'; message: string }
  | { code: 'service_unavailable'; message: string; retryAfter: number };

export interface BodyShares {
  /** Every body at once (BODY_BUFFER_MAX_BYTES). */
  maxBytes: number;
  /** The bodies of one key at once (BODY_BUFFER_KEY_MAX_BYTES). */
  perKeyBytes: number;
  /** The bodies from one client address at once (BODY_BUFFER_ADDRESS_MAX_BYTES). */
  perAddressBytes: number;
}

/** Whose bytes a body's are: its key and its client address. */
export interface BodyOwner {
  key: string;
  address: string;
}

/**
 * The bytes held by bodies being read or waiting for the upstream, shared by every request of a
 * listener: in all, per key and per client address.
 */
export class BodyBudget {
  private held = 0;
  private readonly byKey = new Map<string, number>();
  private readonly byAddress = new Map<string, number>();
  readonly shares: BodyShares;

  constructor(shares: Partial<BodyShares> & { maxBytes: number }) {
    this.shares = { perKeyBytes: shares.maxBytes, perAddressBytes: shares.maxBytes, ...shares };
  }

  /** Whether `n` more bytes of `owner` fit in all three bounds now. */
  fits(owner: BodyOwner, n: number): boolean {
    const { maxBytes, perKeyBytes, perAddressBytes } = this.shares;
    return (
      this.held + n <= maxBytes &&
      (this.byKey.get(owner.key) ?? 0) + n <= perKeyBytes &&
      (this.byAddress.get(owner.address) ?? 0) + n <= perAddressBytes
    );
  }

  take(owner: BodyOwner, n: number): boolean {
    if (!this.fits(owner, n)) return false;
    this.held += n;
    this.byKey.set(owner.key, (this.byKey.get(owner.key) ?? 0) + n);
    this.byAddress.set(owner.address, (this.byAddress.get(owner.address) ?? 0) + n);
    return true;
  }

  give(owner: BodyOwner, n: number): void {
    if (n === 0) return;
    this.held -= n;
    // Emptied entries go: the maps hold only the owners with bodies in flight.
    const k = (this.byKey.get(owner.key) ?? 0) - n;
    if (k > 0) this.byKey.set(owner.key, k);
    else this.byKey.delete(owner.key);
    const a = (this.byAddress.get(owner.address) ?? 0) - n;
    if (a > 0) this.byAddress.set(owner.address, a);
    else this.byAddress.delete(owner.address);
  }

  get bytes(): number {
    return this.held;
  }

  /** The bytes one key holds now. */
  heldByKey(key: string): number {
    return this.byKey.get(key) ?? 0;
  }
}

/**
 * The shares from the settings: unset, a key gets an eighth of the whole and an address a quarter (an
 * address may be a NAT in front of several tenants), never less than one body of BODY_LIMIT_BYTES
 * nor more than the whole.
 */
export function bodySharesOf(s: {
  BODY_LIMIT_BYTES: number;
  BODY_BUFFER_MAX_BYTES: number;
  BODY_BUFFER_KEY_MAX_BYTES?: number;
  BODY_BUFFER_ADDRESS_MAX_BYTES?: number;
}): BodyShares {
  const max = s.BODY_BUFFER_MAX_BYTES;
  const bounded = (n: number) => Math.min(max, Math.max(s.BODY_LIMIT_BYTES, n));
  return {
    maxBytes: max,
    perKeyBytes: Math.min(max, s.BODY_BUFFER_KEY_MAX_BYTES ?? bounded(Math.floor(max / 8))),
    perAddressBytes: Math.min(max, s.BODY_BUFFER_ADDRESS_MAX_BYTES ?? bounded(Math.floor(max / 4))),
  };
}

/** The bytes a request says its body has: its Content-Length, or 1 for a chunked body (size unknown). */
export function announcedBytes(req: IncomingMessage): number {
  const cl = req.headers['content-length'];
  if (cl !== undefined) return Number(cl) || 0;
  return req.headers['transfer-encoding'] !== undefined ? 1 : 0;
}

const NO_ROOM: BodyRefusal = {
  code: 'service_unavailable',
  message: 'The gateway holds too many request bodies right now; retry shortly.',
  retryAfter: 1,
};

/**
 * Checked before the request's rate-limit tokens are spent: a body that cannot be held now is refused
 * 503 without costing its client a token. Only a check, not a reservation: a chunked body, or one
 * whose room was taken by others between this check and its reading, can still be refused while it
 * is read, and that refusal keeps its token spent.
 */
function bodyRoomRefusal(budget: BodyBudget, owner: BodyOwner, req: IncomingMessage): BodyRefusal | null {
  const n = announcedBytes(req);
  if (n === 0 || budget.fits(owner, n)) return null;
  return NO_ROOM;
}

/** An admitted request whose body has no room now is refused instead, its counters read, not spent. */
export function withBodyRoom(budget: BodyBudget, owner: BodyOwner, req: IncomingMessage, decision: Decision): Decision {
  if (decision.kind !== 'admit') return decision;
  const noRoom = bodyRoomRefusal(budget, owner, req);
  return noRoom ? refusedInstead(decision, noRoom) : decision;
}

export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
  budget: BodyBudget;
  owner: BodyOwner;
}

/**
 * A read body; `release` gives its bytes back to the budget (once the upstream answered or failed).
 * It gives them back by itself at the latest BODY_TIMEOUT_MS after the reading began: a body does not
 * hold its room while its answer is slowly read, nor for longer than the time its reading was allowed.
 */
export interface ReadBody {
  bytes: Buffer;
  release(): void;
}

/** Whether the request announces a body: a non-zero Content-Length or any Transfer-Encoding. */
export function announcesBody(req: IncomingMessage): boolean {
  const cl = req.headers['content-length'];
  return (cl !== undefined && cl !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * Read the whole body within the limits. `null` when the client went away mid-body (nothing is left
 * to answer). A client that asked `Expect: 100-continue` is told to go on only now, after the guards.
 */
export function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  limits: BodyLimits,
): Promise<ReadBody | BodyRefusal | null> {
  if (req.headers.expect?.toLowerCase() === '100-continue' && !res.headersSent) res.writeContinue();
  const { budget, owner } = limits;
  const began = Date.now();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (outcome: ReadBody | BodyRefusal | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onGone);
      req.off('error', onGone);
      req.off('close', onGone);
      if (!outcome || !('bytes' in outcome)) {
        budget.give(owner, size);
        req.pause();
      }
      resolve(outcome);
    };
    const timer = setTimeout(
      () =>
        finish({ code: 'request_timeout', message: `The request body did not arrive within ${limits.timeoutMs} ms.` }),
      limits.timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limits.maxBytes) {
        return finish({ code: 'payload_too_large', message: `The body exceeds ${limits.maxBytes} bytes.` });
      }
      if (!budget.take(owner, chunk.length)) return finish(NO_ROOM);
      size += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => {
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        clearTimeout(expiry);
        budget.give(owner, size);
      };
      const expiry = setTimeout(release, Math.max(0, began + limits.timeoutMs - Date.now()));
      expiry.unref();
      finish({ bytes: Buffer.concat(chunks, size), release });
    };
    const onGone = () => finish(null);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('aborted', onGone);
    req.on('error', onGone);
    req.on('close', onGone);
  });
}

export interface Lingering {
  /** How long a connection is read and discarded after its answer, at most (LINGER_TIME_MS). */
  timeMs: number;
  /** How many bytes it is read for, at most (LINGER_MAX_BYTES). */
  maxBytes: number;
}

/**
 * Whenever the answer to `req` closes its connection before the request's body was read to its end,
 * the connection lingers (RFC 9112 section 9.6; nginx's lingering close): the answer and a FIN go out,
 * and what the client still sends is read and thrown away until the client closes its side, for at
 * most `timeMs` and `maxBytes`. Closing at once would leave unread bytes in the socket, which makes
 * the kernel answer with a reset, and a client still writing its body then loses the answer it had
 * not read yet. node:http closes such a connection with `socket.destroySoon()` once the response
 * finished: that call is what is replaced here, for this request's connection.
 */
export function lingerAfterAnswer(req: IncomingMessage, linger: Lingering): void {
  const socket = req.socket as Socket & { destroySoon?: () => void };
  const close = socket.destroySoon;
  if (typeof close !== 'function') return;
  socket.destroySoon = function lingeringClose(this: Socket) {
    if (req.complete || this.destroyed) return close.call(this);
    lingerOn(this, req, linger);
  };
}

function lingerOn(socket: Socket, req: IncomingMessage, linger: Lingering): void {
  socket.end();
  const from = socket.bytesRead;
  const done = () => {
    clearTimeout(deadline);
    clearInterval(meter);
    socket.destroy();
  };
  const deadline = setTimeout(done, linger.timeMs);
  // bytesRead counts what node:http's parser consumes natively too (no 'data' events reach JS then).
  const meter = setInterval(() => {
    if (socket.bytesRead - from > linger.maxBytes) done();
  }, 20);
  deadline.unref();
  meter.unref();
  socket.once('end', done);
  socket.once('close', done);
  // The body refused while it was read was paused there: what still comes is discarded.
  req.resume();
}

// The bytes request bodies hold at once, bounded three ways: across every request (BODY_BUFFER_MAX_BYTES),
// and within that by one key and by one client address (BODY_BUFFER_KEY_MAX_BYTES,
// BODY_BUFFER_ADDRESS_MAX_BYTES); a body without room is refused 503. A client without a key cannot make
// the gateway hold anything (bodies are read only once a request is authorized, ./body-read.ts), and one
// key or one address cannot take the room every other client's bodies need.
import type { IncomingMessage } from 'node:http';
import type { BodyRefusal } from './refusal.js';

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

export const NO_ROOM: BodyRefusal = {
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
export function bodyRoomRefusal(budget: BodyBudget, owner: BodyOwner, req: IncomingMessage): BodyRefusal | null {
  const n = announcedBytes(req);
  if (n === 0 || budget.fits(owner, n)) return null;
  return NO_ROOM;
}

// The identity headers of CONTRACT section 5: what the gateway resolved, signed for the backend.
import { createHmac } from 'node:crypto';
import { safeEqual } from '../access/secrets.js';

export interface Identity {
  keyId: number;
  keyType: 'workspace' | 'personal' | 'partner';
  organizationId: number;
  userId: number | null;
  workspaceId: number | null;
  role: string | null;
  scopes: string[];
  plan: string | null;
}

export const MAX_SIGNATURE_AGE_MS = 60_000;

export function encodeIdentity(id: Identity): string {
  return Buffer.from(JSON.stringify(id)).toString('base64url');
}

export function sign(secret: string, timestamp: string, requestId: string, method: string, path: string, identity: string): string {
  // Two updates rather than one joined string: the identity (hundreds of bytes) is not copied first.
  return createHmac('sha256', secret).update(`${timestamp}\n${requestId}\n${method}\n${path}\n`).update(identity).digest('hex');
}

/** Verify the signed headers of a forwarded request; returns the identity or null. */
export function verifyIdentity(
  secret: string,
  h: { identity?: string; timestamp?: string; signature?: string; requestId?: string },
  method: string,
  path: string,
  now: number,
): Identity | null {
  const { identity, timestamp, signature, requestId } = h;
  if (!identity || !timestamp || !signature || !requestId || !/^\d{1,16}$/.test(timestamp)) return null;
  const age = now - Number(timestamp);
  if (age > MAX_SIGNATURE_AGE_MS || age < -MAX_SIGNATURE_AGE_MS) return null;
  if (!safeEqual(sign(secret, timestamp, requestId, method, path, identity), signature)) return null;
  try {
    return JSON.parse(Buffer.from(identity, 'base64url').toString('utf8')) as Identity;
  } catch {
    return null;
  }
}

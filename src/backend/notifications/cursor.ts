// The opaque cursor of GET .../notifications: a keyset position (the last id of the page; pages go
// by id descending), bound to the workspace and the unreadOnly filter it was issued for, with its
// issue time, authenticated with an HMAC whose key is derived from the database pepper. New
// notifications get larger ids, so they never shift a page that follows a cursor.
//
// Form: base64url(JSON payload) "." base64url(first 16 bytes of HMAC-SHA256(key, payload text)).
// A cursor that is garbled, forged, for another workspace or filter, or older than CURSOR_TTL_MS is
// refused with 400 invalid_request.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

export const CURSOR_TTL_MS = 24 * 60 * 60 * 1000;
/** Clock skew tolerated for a cursor "issued in the future" (several backend instances). */
const SKEW_MS = 60_000;

const payloadSchema = z
  .object({
    v: z.literal(1),
    w: z.number().int().positive(),
    u: z.boolean(),
    i: z.number().int().positive(),
    o: z.number().int().nonnegative(),
    t: z.number().int().nonnegative(),
  })
  .strict();
type Payload = z.infer<typeof payloadSchema>;

export interface CursorPosition {
  workspaceId: number;
  unreadOnly: boolean;
  /** Continue with ids strictly below this one. */
  afterId: number;
  /** How many notifications the pages before this cursor held (for the informational page number). */
  offset: number;
}

export class CursorCodec {
  private key: Buffer;

  constructor(pepper: string) {
    // A key of its own, so a cursor MAC can never be confused with a secret's keyed hash.
    this.key = createHmac('sha256', pepper).update('keygate:notifications-cursor:v1').digest();
  }

  private mac(text: string): Buffer {
    return createHmac('sha256', this.key).update(text).digest().subarray(0, 16);
  }

  encode(pos: CursorPosition, nowMs: number): string {
    const payload: Payload = { v: 1, w: pos.workspaceId, u: pos.unreadOnly, i: pos.afterId, o: pos.offset, t: nowMs };
    const text = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${text}.${this.mac(text).toString('base64url')}`;
  }

  /** The position, or a reason why the cursor is refused. */
  decode(cursor: string, expect: { workspaceId: number; unreadOnly: boolean }, nowMs: number): CursorPosition | string {
    const cursorMatch = /^([A-Za-z0-9_-]{1,400})\.([A-Za-z0-9_-]{22})$/.exec(cursor);
    if (!cursorMatch) return 'malformed cursor';
    // Compare the text, not the decoded bytes: base64url decoding ignores the last character's spare
    // bits, and only the one canonical spelling of a cursor is accepted.
    const given = Buffer.from(cursorMatch[2]);
    const want = Buffer.from(this.mac(cursorMatch[1]).toString('base64url'));
    if (given.length !== want.length || !timingSafeEqual(given, want)) return 'cursor signature does not match';
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(cursorMatch[1], 'base64url').toString('utf8'));
    } catch {
      return 'malformed cursor';
    }
    const validated = payloadSchema.safeParse(parsed);
    if (!validated.success) return 'malformed cursor';
    const payload = validated.data;
    if (payload.w !== expect.workspaceId) return 'cursor was issued for another workspace';
    if (payload.u !== expect.unreadOnly) return 'cursor was issued for another unreadOnly filter';
    if (payload.t > nowMs + SKEW_MS || nowMs - payload.t > CURSOR_TTL_MS)
      return 'cursor has expired; start again without a cursor';
    return { workspaceId: payload.w, unreadOnly: payload.u, afterId: payload.i, offset: payload.o };
  }
}

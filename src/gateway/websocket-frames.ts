// The little of RFC 6455 the gateway needs to close a tunnel itself: where one frame ends in a stream of
// them (section 5.2), so the close frame it writes goes between two frames and never inside one, and
// the close frame itself (section 5.5.1). The payloads are never read: a tunnel's bytes are relayed as
// they come, extensions (permessage-deflate) included, since those only change what a payload holds.
import { randomBytes } from 'node:crypto';

/** Close codes the gateway sends (RFC 6455 section 7.4.1). */
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_POLICY = 1008;

/** A frame header is at most 14 bytes: 2, an extended length of 8, a masking key of 4. */
const HEADER_MAX = 14;

/**
 * Where a stream of frames is: inside a header (bytes of it kept), inside a payload (bytes left), or
 * between two frames. Per chunk: a header costs a few byte reads, a payload one subtraction.
 */
export class FrameCursor {
  private readonly header = Buffer.alloc(HEADER_MAX);
  private headerBytes = 0;
  private payloadLeft = 0;

  /** Between two frames: a frame the gateway writes now cannot split one. */
  get atBoundary(): boolean {
    return this.headerBytes === 0 && this.payloadLeft === 0;
  }

  /**
   * Follow `chunk` from `from` on; with `toBoundary`, stop at the first point between two frames (at
   * once when already there). Returns the index where it stopped (chunk.length when it went through).
   */
  advance(chunk: Buffer, toBoundary = false, from = 0): number {
    let i = from;
    while (i < chunk.length) {
      if (toBoundary && this.atBoundary) return i;
      if (this.payloadLeft > 0) {
        const n = Math.min(this.payloadLeft, chunk.length - i);
        this.payloadLeft -= n;
        i += n;
        continue;
      }
      this.header[this.headerBytes++] = chunk[i++];
      if (this.headerBytes >= 2 && this.headerBytes === headerLength(this.header)) {
        this.payloadLeft = payloadLength(this.header);
        this.headerBytes = 0;
      }
    }
    return i;
  }
}

/** The header's whole length, from its second byte: the length's form and the mask bit. */
function headerLength(h: Buffer): number {
  const len7 = h[1] & 0x7f;
  return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (h[1] & 0x80 ? 4 : 0);
}

function payloadLength(h: Buffer): number {
  const len7 = h[1] & 0x7f;
  if (len7 === 126) return h.readUInt16BE(2);
  // 2^53 bytes are never reached; a peer claiming more is cut off by the tunnel's end anyway.
  if (len7 === 127) return Number(h.readBigUInt64BE(2));
  return len7;
}

/**
 * A close frame with `code` and `reason` (at most 123 bytes of UTF-8: a control frame's payload is at
 * most 125). A client's frames to a server are masked (section 5.3); a server's never are.
 */
export function closeFrame(code: number, reason: string, masked: boolean): Buffer {
  let text = Buffer.from(reason, 'utf8');
  if (text.length > 123) text = text.subarray(0, 123);
  const payload = Buffer.alloc(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  const head = Buffer.from([0x88, (masked ? 0x80 : 0) | payload.length]);
  if (!masked) return Buffer.concat([head, payload]);
  const mask = randomBytes(4);
  for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
  return Buffer.concat([head, mask, payload]);
}

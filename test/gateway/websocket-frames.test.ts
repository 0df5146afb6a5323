// The frame boundaries a tunnel's own close frame waits for (src/gateway/websocket-frames.ts), against
// frames made by `ws` itself: every length form, masked and not, split anywhere across chunks.
import { describe, expect, it } from 'vitest';
import * as ws from 'ws';
import { FrameCursor, closeFrame } from '../../src/gateway/websocket-frames.js';

// ws's own frame codec, which @types/ws does not declare.
const { Receiver, Sender } = ws as unknown as {
  Receiver: new (o: { isServer: boolean }) => {
    write(b: Buffer): void;
    on(event: 'conclude', listener: (code: number, reason: Buffer) => void): void;
  };
  Sender: { frame(data: Buffer, o: Record<string, unknown>): Buffer[] };
};

/** The bytes `ws` writes for these messages (masked as a client's when `mask`). */
function framesOf(payloads: Buffer[], mask: boolean): Buffer[] {
  return payloads.map((p) => {
    const parts = Sender.frame(p, { fin: true, opcode: 2, mask, readOnly: false, rsv1: false });
    return Buffer.concat(parts);
  });
}

/** Where `cursor` finds a frame's end in `stream` fed in chunks of `size`. */
function boundaries(cursor: FrameCursor, stream: Buffer, size: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < stream.length; i += size) {
    const chunk = stream.subarray(i, i + size);
    let from = 0;
    while (from < chunk.length) {
      // Between two frames, advancing to a boundary stops at once: one byte into the next frame first.
      from = cursor.atBoundary
        ? cursor.advance(chunk.subarray(0, from + 1), false, from)
        : cursor.advance(chunk, true, from);
      if (cursor.atBoundary) out.push(i + from);
    }
  }
  return out;
}

describe('FrameCursor', () => {
  for (const mask of [false, true]) {
    it(`finds each frame's end, its header split anywhere (${mask ? 'masked' : 'unmasked'})`, () => {
      // 7-bit, 16-bit and 64-bit lengths, and an empty payload.
      const frames = framesOf(
        [Buffer.alloc(5, 1), Buffer.alloc(300, 2), Buffer.alloc(70_000, 3), Buffer.alloc(0)],
        mask,
      );
      const stream = Buffer.concat(frames);
      const ends = new Set<number>();
      let at = 0;
      for (const f of frames) ends.add((at += f.length));
      for (const size of [1, 2, 3, 7, 13, 1000, stream.length]) {
        const cursor = new FrameCursor();
        const seen = boundaries(cursor, stream, size);
        expect(new Set(seen), `chunks of ${size}`).toEqual(ends);
        expect(cursor.atBoundary).toBe(true);
      }
    });
  }

  it('stops at once when between two frames, and goes through a chunk inside one payload', () => {
    const [frame] = framesOf([Buffer.alloc(1000)], false);
    const cursor = new FrameCursor();
    expect(cursor.advance(frame, true)).toBe(0);
    expect(cursor.advance(frame.subarray(0, 500))).toBe(500);
    expect(cursor.atBoundary).toBe(false);
    const rest = Buffer.concat([frame.subarray(500), Buffer.from([0x88, 0x00])]);
    expect(cursor.advance(rest, true)).toBe(frame.length - 500);
    expect(cursor.atBoundary).toBe(true);
  });
});

describe('closeFrame', () => {
  for (const masked of [false, true]) {
    it(`is read by ws as a close with its code and reason (${masked ? 'masked' : 'unmasked'})`, async () => {
      const receiver = new Receiver({ isServer: masked });
      const got = new Promise<[number, string]>((resolve) =>
        receiver.on('conclude', (code: number, reason: Buffer) => resolve([code, reason.toString()])),
      );
      receiver.write(closeFrame(1008, 'Invalid or revoked API key.', masked));
      expect(await got).toEqual([1008, 'Invalid or revoked API key.']);
    });
  }

  it('cuts a reason to the 123 bytes a control frame holds', () => {
    const frame = closeFrame(1001, 'x'.repeat(500), false);
    expect(frame[1]).toBe(125);
    expect(frame.length).toBe(127);
  });
});

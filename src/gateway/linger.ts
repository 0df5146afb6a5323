// A refused request's connection is closed only after a bounded while of reading and discarding what the
// client still sends, so that the client reads its answer (LINGER_TIME_MS, LINGER_MAX_BYTES).
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

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

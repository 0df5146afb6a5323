// Graceful drain of an HTTP listener (docs/decisions.md section 8), shared by the gateway and the backend.
// From the signal on: no new connection is accepted; every response carries `Connection: close`, so
// a kept-alive connection takes no further request once its current one is answered; in-flight
// requests finish. At the drain deadline the caller may still answer what is left (`beforeForce`),
// then every connection is closed.
//
// A connection with no request in progress is not closed at the signal: its client may be sending
// its next request at that very moment, and closing would reset that request (HTTP/1.1 has no way to
// tell a client "no more" except in an answer). It gets `IDLE_GRACE_MS` to send one, which is then
// answered with `Connection: close`; only a connection that stayed idle that long is closed. A
// connection accepted but whose first request has not arrived yet counts as idle from its accept, so
// a new connection is never closed the instant it arrives (under node:cluster one can reach a worker
// just after its signal).
import type http from 'node:http';
import net from 'node:net';

/** How long a connection idle during the drain may still send a request before it is closed. */
export const IDLE_GRACE_MS = 1_000;

export interface Drainable {
  /** True once drain() was called. */
  readonly draining: boolean;
  /** Stop accepting and wait for in-flight requests, at most `ms`. */
  drain(ms: number, beforeForce?: () => void): Promise<void>;
}

/**
 * A listener whose own request handler reports each request's start and close: one 'request' and one
 * 'close' listener per request instead of two of each (the gateway's, ../gateway/server.ts).
 */
export interface ReportedDrainable extends Drainable {
  /** First thing for every request ('request' and 'checkContinue'). */
  began(req: http.IncomingMessage, res: http.ServerResponse): void;
  /** The request's response closed. */
  ended(req: http.IncomingMessage): void;
}

/**
 * A connection's requests in progress, and since when it has had none. That moment counts only from
 * the drain's start on (the grace runs from the later of the two), so before it any earlier time will
 * do and the clock is not read for every request.
 */
interface Use {
  active: number;
  idleSince: number;
}

export function drainable(server: http.Server): Drainable;
export function drainable(server: http.Server, reported: 'reported'): ReportedDrainable;
export function drainable(server: http.Server, reported?: 'reported'): ReportedDrainable {
  let draining = false;
  const uses = new Map<net.Socket, Use>();
  let onGone: (() => void) | null = null;
  server.on('connection', (socket: net.Socket) => {
    uses.set(socket, { active: 0, idleSince: Date.now() });
    socket.once('close', () => {
      uses.delete(socket);
      onGone?.();
    });
  });
  const began = (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (draining) res.setHeader('connection', 'close');
    const use = uses.get(req.socket);
    if (use) use.active++;
  };
  const ended = (req: http.IncomingMessage) => {
    // A connection already gone was forgotten with its count.
    const use = uses.get(req.socket);
    if (!use) return;
    use.active--;
    use.idleSince = draining ? Date.now() : 0;
  };
  if (reported === undefined) {
    // Runs before the request handlers (listeners are called in order; this one is added first).
    const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
      began(req, res);
      res.once('close', () => ended(req));
    };
    server.prependListener('request', onRequest);
    // node:http emits 'checkContinue' instead of 'request' for `Expect: 100-continue` when it is listened to.
    server.prependListener('checkContinue', onRequest);
  }
  return {
    began,
    ended,
    get draining() {
      return draining;
    },
    drain(ms, beforeForce) {
      draining = true;
      const began = Date.now();
      const grace = Math.min(IDLE_GRACE_MS, ms);
      return new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        const closeIdle = () => {
          const now = Date.now();
          for (const [socket, use] of uses) {
            if (use.active === 0 && now - Math.max(use.idleSince, began) >= grace) socket.destroy();
          }
        };
        const sweep = setInterval(closeIdle, 50);
        const force = setTimeout(() => {
          beforeForce?.();
          // What was just answered gets a moment to reach its client before the sockets go.
          setTimeout(() => server.closeAllConnections(), 200).unref();
        }, ms);
        let closed = false;
        const finish = () => {
          if (!closed || uses.size > 0) return;
          clearInterval(sweep);
          clearTimeout(force);
          onGone = null;
          resolve();
        };
        onGone = finish;
        // net.Server's close: stop accepting. http.Server's own close (Node 19 on) would first close
        // every idle connection at once, racing their clients. Its callback waits only for the
        // connections this listener accepted; those a cluster primary handed over are in `uses` too.
        net.Server.prototype.close.call(server, () => {
          closed = true;
          finish();
        });
        closeIdle();
      });
    },
  };
}

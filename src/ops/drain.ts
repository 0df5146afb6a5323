// Graceful drain of an HTTP listener (CONTRACT section 8), shared by the gateway and the backend.
// From the signal on: no new connection is accepted; every response carries `Connection: close`, so
// a kept-alive connection takes no further request once its current one is answered; connections
// that are idle are closed at once; in-flight requests finish. At the drain deadline the caller may
// still answer what is left (`beforeForce`), then every connection is closed.
import type http from 'node:http';

export interface Drainable {
  /** True once drain() was called. */
  readonly draining: boolean;
  /** Stop accepting and wait for in-flight requests, at most `ms`. */
  drain(ms: number, beforeForce?: () => void): Promise<void>;
}

export function drainable(server: http.Server): Drainable {
  let draining = false;
  // Runs before the request handlers (listeners are called in order; this one is added first).
  server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!draining) return;
    res.setHeader('connection', 'close');
  });
  return {
    get draining() {
      return draining;
    },
    drain(ms, beforeForce) {
      draining = true;
      return new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        // A connection whose response began before the signal ends kept-alive: close it once it is idle.
        const closeIdle = setInterval(() => server.closeIdleConnections(), 50);
        const force = setTimeout(() => {
          beforeForce?.();
          // What was just answered gets a moment to reach its client before the sockets go.
          setTimeout(() => server.closeAllConnections(), 200).unref();
        }, ms);
        server.close(() => {
          clearInterval(closeIdle);
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
    },
  };
}

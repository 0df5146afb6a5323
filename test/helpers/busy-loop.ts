// Synthetic event-loop stalls for tests whose gateway runs in the test's own process: what a loaded
// machine or a long synchronous task does to the gateway, on demand.
import { stat } from 'node:fs';

/** Busy-waits `ms` on this thread: the gateway runs in the test's process, so its loop stalls too. */
export function stall(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spinning on purpose
  }
}

/**
 * A stall of `stallMs` every `periodMs`, in each phase of the event loop in turn: in a timer, in an I/O callback (where a
 * burst of requests is parsed) and after I/O (setImmediate, where the gate's batches are sent).
 * Replies that arrive during a stall wait in the socket; timers that expired meanwhile run first.
 */
export function stallEveryPhase(periodMs: number, stallMs = 100): () => void {
  let turn = 0;
  const timer = setInterval(() => {
    const phase = turn++ % 3;
    if (phase === 0) stall(stallMs);
    else if (phase === 1) stat(import.meta.dirname, () => stall(stallMs));
    else setImmediate(() => stall(stallMs));
  }, periodMs);
  return () => clearInterval(timer);
}

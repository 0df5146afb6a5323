// Request bodies are read only once a request is authorized (the guards decide from the headers), and
// reading is bounded three ways: the size of one body (BODY_LIMIT_BYTES, then 413), the time it may
// take (BODY_TIMEOUT_MS, then 408) and the bytes held across every request at once
// (BODY_BUFFER_MAX_BYTES, then 503): a client without a key cannot make the gateway hold anything,
// and clients with keys cannot make it hold more than the operator allowed.
import type { IncomingMessage, ServerResponse } from 'node:http';

export type BodyRefusal =
  | { code: 'payload_too_large'; message: string }
  | { code: 'request_timeout'; message: string }
  | { code: 'service_unavailable'; message: string; retryAfter: number };

/** The bytes held by bodies being read or waiting to be forwarded, shared by every request of a listener. */
export class BodyBudget {
  private held = 0;
  constructor(readonly maxBytes: number) {}

  take(n: number): boolean {
    if (this.held + n > this.maxBytes) return false;
    this.held += n;
    return true;
  }

  give(n: number): void {
    this.held -= n;
  }

  get bytes(): number {
    return this.held;
  }
}

export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
  budget: BodyBudget;
}

/** A read body; `release` gives its bytes back to the budget (once forwarded or refused). */
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
export function readBody(req: IncomingMessage, res: ServerResponse, limits: BodyLimits): Promise<ReadBody | BodyRefusal | null> {
  if (req.headers.expect?.toLowerCase() === '100-continue' && !res.headersSent) res.writeContinue();
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
        limits.budget.give(size);
        req.pause();
      }
      resolve(outcome);
    };
    const timer = setTimeout(
      () => finish({ code: 'request_timeout', message: `The request body did not arrive within ${limits.timeoutMs} ms.` }),
      limits.timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limits.maxBytes) {
        return finish({ code: 'payload_too_large', message: `The body exceeds ${limits.maxBytes} bytes.` });
      }
      if (!limits.budget.take(chunk.length)) {
        return finish({ code: 'service_unavailable', message: 'The gateway holds too many request bodies right now; retry shortly.', retryAfter: 1 });
      }
      size += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => {
      let released = false;
      finish({
        bytes: Buffer.concat(chunks, size),
        release: () => {
          if (released) return;
          released = true;
          limits.budget.give(size);
        },
      });
    };
    const onGone = () => finish(null);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('aborted', onGone);
    req.on('error', onGone);
    req.on('close', onGone);
  });
}

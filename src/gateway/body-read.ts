// Request bodies are read only once a request is authorized (the guards decide from the headers), and
// reading is bounded: the size of one body (BODY_LIMIT_BYTES, then 413), the time it may take
// (BODY_TIMEOUT_MS, then 408), and the room bodies hold at once (./body-budget.ts, then 503).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { NO_ROOM, type BodyBudget, type BodyOwner } from './body-budget.js';
import type { BodyRefusal } from './refusal.js';

export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
  budget: BodyBudget;
  owner: BodyOwner;
}

/**
 * A read body; `release` gives its bytes back to the budget (once the upstream answered or failed).
 * It gives them back by itself at the latest BODY_TIMEOUT_MS after the reading began: a body does not
 * hold its room while its answer is slowly read, nor for longer than the time its reading was allowed.
 */
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
export function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  limits: BodyLimits,
): Promise<ReadBody | BodyRefusal | null> {
  if (req.headers.expect?.toLowerCase() === '100-continue' && !res.headersSent) res.writeContinue();
  const { budget, owner } = limits;
  const began = Date.now();
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
        budget.give(owner, size);
        req.pause();
      }
      resolve(outcome);
    };
    const timer = setTimeout(
      () =>
        finish({ code: 'request_timeout', message: `The request body did not arrive within ${limits.timeoutMs} ms.` }),
      limits.timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limits.maxBytes) {
        return finish({ code: 'payload_too_large', message: `The body exceeds ${limits.maxBytes} bytes.` });
      }
      if (!budget.take(owner, chunk.length)) return finish(NO_ROOM);
      size += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => {
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        clearTimeout(expiry);
        budget.give(owner, size);
      };
      const expiry = setTimeout(release, Math.max(0, began + limits.timeoutMs - Date.now()));
      expiry.unref();
      finish({ bytes: Buffer.concat(chunks, size), release });
    };
    const onGone = () => finish(null);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('aborted', onGone);
    req.on('error', onGone);
    req.on('close', onGone);
  });
}

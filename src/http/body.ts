// A request body read whole, within a size limit, for the backend and the admin API.
import type { IncomingMessage } from 'node:http';

/**
 * The body, or 'too_large' as soon as it is over `limit` bytes (at once when its Content-Length says
 * so). The rest of a body too large is drained unread, so the refusal is still answered on the
 * connection.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  if (Number(req.headers['content-length'] ?? 0) > limit) return Promise.resolve('too_large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      stop().resume();
      resolve('too_large');
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    // A connection gone before the end without an error: nothing more will come.
    const onClose = () => onError(new Error('the request was aborted'));
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/** The body as JSON (undefined when empty), or null when it is not JSON. */
export function jsonOf(body: Buffer): { value: unknown } | null {
  if (body.length === 0) return { value: undefined };
  try {
    return { value: JSON.parse(body.toString('utf8')) };
  } catch {
    return null;
  }
}

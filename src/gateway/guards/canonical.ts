// Step 1 of docs/decisions.md sections 3 and 4, decided from the request head alone: a canonical path (so
// the path authorized is byte for byte the path the upstream routes), one Host (RFC 9112 section
// 3.2), a target within its bound, a body only where a body means something, and a declared size within the limit. The body
// itself is read only after every other guard passed (src/gateway/body-read.ts).
import type { IncomingMessage } from 'node:http';
import { LRUCache } from 'lru-cache';
import { pathProblem } from '../path.js';
import { announcesBody } from '../body-read.js';
import type { Refusal } from '../refusal.js';

// Paths repeat (a client polls the same resources): their verdict is remembered.
const verdicts = new LRUCache<string, string>({ max: 10_000 });
const CANONICAL = '';

function pathVerdict(path: string): string | null {
  let v = verdicts.get(path);
  if (v === undefined) verdicts.set(path, (v = pathProblem(path) ?? CANONICAL));
  return v === CANONICAL ? null : v;
}

function hostLines(req: IncomingMessage): number {
  let n = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') n++;
  return n;
}

export function canonicalRequest(
  req: IncomingMessage,
  path: string,
  bodyLimitBytes: number,
  targetMaxBytes = Infinity,
): Refusal | null {
  // The target travels upstream in the request line (and, up to a bound, in the identity JWT): a longer
  // one would be refused by the upstream's header limit after the request spent its tokens.
  if ((req.url?.length ?? 0) > targetMaxBytes)
    return { code: 'uri_too_long', message: `The request target exceeds ${targetMaxBytes} bytes.` };
  const problem = pathVerdict(path);
  if (problem) return { code: 'invalid_request', message: problem };
  if (hostLines(req) > 1) return { code: 'invalid_request', message: 'A request must carry exactly one Host field.' };
  const cl = req.headers['content-length'];
  if (cl !== undefined) {
    if (!/^\d+$/.test(cl)) return { code: 'invalid_request', message: 'Invalid Content-Length.' };
    if (Number(cl) > bodyLimitBytes)
      return { code: 'payload_too_large', message: `The body exceeds ${bodyLimitBytes} bytes.` };
  }
  // A body on GET or HEAD has no meaning (RFC 9110 section 9.3.1) and would reach the upstream unsigned.
  if ((req.method === 'GET' || req.method === 'HEAD') && announcesBody(req)) {
    return { code: 'invalid_request', message: `A ${req.method} request must not carry a body.` };
  }
  return null;
}

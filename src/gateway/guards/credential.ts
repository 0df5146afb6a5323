// Step 2: the credential the interface expects. /v2: `Authorization: Bearer <secret>`, one or more
// spaces after the scheme (RFC 9110 section 11.4, RFC 6750 section 2.1). /v1: `X-Api-Key`.
import type { IncomingMessage } from 'node:http';

const BEARER = /^Bearer +(\S+)$/i;

export function bearerSecret(req: IncomingMessage): string | null {
  const auth = req.headers.authorization;
  const m = auth ? BEARER.exec(auth) : null;
  return m ? m[1] : null;
}

export function partnerSecret(req: IncomingMessage): string | null {
  const key = req.headers['x-api-key'];
  return typeof key === 'string' && key !== '' ? key : null;
}

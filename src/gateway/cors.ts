// CORS for browser clients of the API (CORS_ORIGINS). A preflight (OPTIONS with
// Access-Control-Request-Method) is answered by the gateway itself, before any guard: it carries no
// key, spends nothing and is never forwarded. Every other response to an allowed origin says so and
// exposes the rate-limit fields, so a page can read a 429's Retry-After. With CORS on, the gateway owns
// the Access-Control-* fields (the upstream's are dropped, src/gateway/response-head.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';

const METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
const ALLOWED_REQUEST_HEADERS = new Set([
  'authorization',
  'x-api-key',
  'content-type',
  'x-request-id',
  'accept',
  'accept-language',
  'content-language',
]);
const EXPOSED =
  'X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-IP-Limit, X-RateLimit-IP-Remaining, RateLimit, RateLimit-Policy, Retry-After, Deprecation, Sunset';

export interface Cors {
  readonly enabled: boolean;
  /** Set the CORS fields of a response to an allowed origin. */
  decorate(req: IncomingMessage, res: ServerResponse): void;
  /** A preflight: answered here (true), or not one (false). */
  preflight(req: IncomingMessage, res: ServerResponse): boolean;
}

/** `origins`: exact origins (`https://app.example.com`) or `*` for any. Empty: CORS off. */
export function createCors(origins: string[]): Cors {
  const any = origins.includes('*');
  const allowed = new Set(origins.map((o) => o.toLowerCase()));
  const allows = (origin: string | undefined): origin is string =>
    origin !== undefined && (any || allowed.has(origin.toLowerCase()));
  const enabled = origins.length > 0;
  return {
    enabled,
    decorate(req, res) {
      if (!enabled) return;
      res.setHeader('Vary', 'Origin');
      const origin = req.headers.origin;
      if (!allows(origin)) return;
      res.setHeader('Access-Control-Allow-Origin', any ? '*' : origin);
      res.setHeader('Access-Control-Expose-Headers', EXPOSED);
    },
    preflight(req, res) {
      if (!enabled || req.method !== 'OPTIONS' || req.headers['access-control-request-method'] === undefined)
        return false;
      const origin = req.headers.origin;
      const requested = (req.headers['access-control-request-headers'] ?? '')
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean);
      const method = String(req.headers['access-control-request-method']).toUpperCase();
      const ok =
        allows(origin) &&
        METHODS.split(', ').includes(method) &&
        requested.every((h) => ALLOWED_REQUEST_HEADERS.has(h));
      res.setHeader('Vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
      if (ok) {
        res.setHeader('Access-Control-Allow-Origin', any ? '*' : origin);
        res.setHeader('Access-Control-Allow-Methods', METHODS);
        res.setHeader('Access-Control-Allow-Headers', [...ALLOWED_REQUEST_HEADERS].join(', '));
        res.setHeader('Access-Control-Max-Age', 600);
      }
      // A refused preflight carries no Allow-* field: the browser then refuses the request itself.
      res.writeHead(204, { 'content-length': 0 });
      res.end();
      return true;
    },
  };
}

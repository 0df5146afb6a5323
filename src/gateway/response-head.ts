// The upstream's response fields the client may see: hop-by-hop fields and the fields the gateway owns
// (its rate-limit headers, Retry-After, X-Request-Id, with CORS on the Access-Control-* fields) never
// come from the upstream.
// undici's own file, not its index (src/gateway/undici-pool.d.ts).
import { headerNameToString } from 'undici/lib/core/util.js';
import { connectionOptions, type ResponseFields } from './fields.js';

/** Response fields that describe one connection (RFC 9110 section 7.6.1) or that only the gateway may set. */
const RESPONSE_DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'x-request-id',
  'ratelimit',
  'ratelimit-policy',
]);

/** Copy the upstream's response fields the client may see (raw name/value pairs, as undici hands them). */
export function copyResponseHeaders(raw: Buffer[], status: number, head: ResponseFields, ownCors: boolean): void {
  let named: Set<string> | null = null;
  const names: string[] = new Array(raw.length >> 1);
  for (let i = 0; i < raw.length; i += 2) {
    // A known name is read from undici's table of lower-cased names, without a string made and lowered.
    const name = (names[i >> 1] = headerNameToString(raw[i]));
    if (name === 'connection') named = connectionOptions(raw[i + 1].toString('latin1'));
  }
  let vary: string | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = names[i >> 1];
    if (RESPONSE_DROPPED.has(name) || name.startsWith('x-ratelimit-') || named?.has(name)) continue;
    // Retry-After belongs to the gateway's own 429s; an upstream's 503 may still say when it is back.
    if (name === 'retry-after' && status !== 503) continue;
    if (ownCors && name.startsWith('access-control-')) continue;
    const value = raw[i + 1].toString('latin1');
    if (ownCors && name === 'vary') {
      vary = vary === null ? value : `${vary}, ${value}`;
      continue;
    }
    head.push(name, value);
  }
  // CORS's `Vary: Origin` was set on the response (src/gateway/cors.ts); this list's value replaces it.
  if (vary !== null) head.push('vary', `Origin, ${vary}`);
}

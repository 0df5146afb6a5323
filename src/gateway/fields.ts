// HTTP fields as the gateway handles them in both directions: the response fields it writes itself
// (./answers.ts, ./headers.ts) ahead of the upstream's (./response-head.ts), and the fields a Connection
// header declares hop-by-hop, dropped from the request (./request-fields.ts) and from the response.

/** Response fields as a flat list: name, value, name, value (node:http's writeHead takes it as is). */
export type ResponseFields = (string | number)[];

const PLAIN_CONNECTION = /^(keep-alive|close)$/i;

/** Header names listed in a Connection field: hop-by-hop by declaration (RFC 9110 section 7.6.1). */
export function connectionOptions(value: string | string[] | undefined): Set<string> | null {
  // The usual values name no field beyond the ones always dropped (Keep-Alive is one of them).
  if (value === undefined || (typeof value === 'string' && PLAIN_CONNECTION.test(value))) return null;
  const out = new Set<string>();
  for (const token of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '') out.add(name);
  }
  return out;
}

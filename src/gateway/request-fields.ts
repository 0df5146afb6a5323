// The fields the upstream gets from the client (RFC 9110 section 7.6.1): no credential, no hop-by-hop
// field (nor any field the client named in Connection), no field spelled with underscores (which
// CGI-style upstreams read as dashes, e.g. `X_Api_Key` as `X-Api-Key`), nothing posing as the gateway;
// and the forwarding fields the gateway writes itself (docs/decisions.md section 5).
import type { IncomingHttpHeaders } from 'node:http';
import type { GatewayDeps, RequestContext } from './context.js';
import type { FieldList } from './upstream-client.js';
import { connectionOptions } from './fields.js';
import { normalizeIp } from '../http/client-ip.js';

/** Request fields that never travel upstream. */
const DROPPED = new Set([
  // credentials
  'authorization',
  'x-api-key',
  'cookie',
  'proxy-authorization',
  // hop-by-hop (RFC 9110 section 7.6.1) and framing, which the gateway sets itself
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  // answered by the gateway itself (src/gateway/body-read.ts)
  'expect',
  // set by the gateway
  'content-length',
  'content-digest',
  'x-request-id',
  // Where the request came from and what it asked for, as an upstream may believe them: a method
  // override or an original URL would let the upstream act outside the method and path authorized
  // here, a client address or scheme would let the client pose as another. The gateway sends its own
  // X-Forwarded-For, X-Forwarded-Proto, X-Forwarded-Host and Forwarded (see forwardingFields).
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-original-url',
  'x-original-uri',
  'x-rewrite-url',
  'x-original-method',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-server',
  'x-forwarded-ssl',
  'x-forwarded-scheme',
  'x-url-scheme',
  'front-end-https',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-cluster-client-ip',
]);

/** A Host value (RFC 9110 section 7.2): a name or an IP literal, an optional port; nothing else. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;
// Nearly every request names the same host as the one before it: that verdict is kept.
let lastHost = '';
let lastHostValid = false;
function validHost(host: string): boolean {
  if (host !== lastHost) {
    lastHostValid = HOST.test(host);
    lastHost = host;
  }
  return lastHostValid;
}

function single(v: string | string[] | undefined): string | undefined {
  if (Array.isArray(v)) return v.length === 1 ? v[0] : undefined;
  return v;
}

/**
 * The client address, protocol and host as the gateway saw them. From a TRUST_PROXY peer (a TLS
 * terminator in front of the gateway) its X-Forwarded-Proto and X-Forwarded-Host are believed when
 * they are a scheme and a host; otherwise the protocol is the gateway's own listener's (http) and the
 * host the request's Host field. X-Forwarded-For keeps what came before and appends the client address
 * (docs/decisions.md section 5); Forwarded (RFC 7239) is one element of the gateway's own, replacing the client's.
 */
export function forwardingFields(deps: GatewayDeps, ctx: RequestContext, out: FieldList): void {
  const h = ctx.req.headers;
  const peerTrusted = !deps.trusted.empty && deps.trusted.has(normalizeIp(ctx.req.socket.remoteAddress));
  let proto = 'http';
  let host = single(h.host);
  if (peerTrusted) {
    const p = single(h['x-forwarded-proto'])?.trim().toLowerCase();
    if (p === 'http' || p === 'https') proto = p;
    const fh = single(h['x-forwarded-host'])?.trim();
    if (fh && validHost(fh)) host = fh;
  }
  const xff = h['x-forwarded-for'];
  out.push(
    'x-forwarded-for',
    xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${ctx.ip}` : ctx.ip,
    'x-forwarded-proto',
    proto,
  );
  const forwarded = `for=${ctx.ip.includes(':') ? `"[${ctx.ip}]"` : ctx.ip};proto=${proto}`;
  if (host && validHost(host)) out.push('x-forwarded-host', host, 'forwarded', `${forwarded};host="${host}"`);
  else out.push('forwarded', forwarded);
}

/**
 * The client's fields that travel upstream, as a flat list undici takes as it is: an object was walked
 * again by undici (its keys, then a keyed load each), in V8's megamorphic paths. Every field the gateway
 * sets itself is dropped here (DROPPED, `x-gateway-*`; the trace context when a trace hook sets it), so
 * appending the gateway's own never sends a name twice. `keyField` is the field the interface reads its key
 * from (docs/profiles.md, `key.header`): a credential too, wherever a profile puts it.
 */
export function cleanHeaders(headers: IncomingHttpHeaders, traced: boolean, keyField = 'authorization'): FieldList {
  const named = connectionOptions(headers.connection);
  const out: FieldList = [];
  for (const k in headers) {
    if (DROPPED.has(k) || k === keyField || k.startsWith('x-gateway-') || k.includes('_') || named?.has(k)) continue;
    if (traced && (k === 'traceparent' || k === 'tracestate')) continue;
    const v = headers[k];
    if (v !== undefined) out.push(k, v);
  }
  return out;
}

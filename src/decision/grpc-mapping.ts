// Envoy's CheckRequest as the described request of the decision core (./decide.ts), and the decision
// as Envoy's CheckResponse (docs/forward-auth-grpc.md, The mapping).
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { status as grpcStatus } from '@grpc/grpc-js';
import { clientIp, normalizeIp, type TrustedProxies } from '../http/client-ip.js';
import type { Decision, DecisionRequest } from './decide.js';
import type { CheckRequest, CheckResponse, HeaderValueOption } from './grpc-proto.js';

/** RFC 9110 section 5.6.2: a method is a token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Set, never appended: the service must not see a value the client sent under a name keygate writes. */
const OVERWRITE_IF_EXISTS_OR_ADD = 2;

/**
 * The client's credentials, which keygate's proxy never sends upstream (src/gateway/request-fields.ts,
 * DROPPED): Envoy is told to remove them, as it passes the client's request on otherwise unchanged.
 */
const CREDENTIALS = ['authorization', 'x-api-key', 'cookie', 'proxy-authorization'];

/** Framing Envoy writes itself on its local reply; keygate's own would disagree with it or repeat it. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/** A CheckRequest keygate cannot decide on: the field named, never its value. */
export class InvalidCheck extends Error {
  override name = 'InvalidCheck';
}

/**
 * The request Envoy describes. The client address is found as keygate's proxy finds it: the source
 * address Envoy states plays the socket peer (the gRPC caller's own address when Envoy states none),
 * and X-Forwarded-For is believed through TRUST_PROXY from it (src/http/client-ip.ts).
 */
export function describedRequest(check: CheckRequest, grpcPeer: string, trusted: TrustedProxies): DecisionRequest {
  const http = check.attributes?.request?.http;
  if (!http) throw new InvalidCheck('attributes.request.http is required');
  const method = http.method ?? '';
  if (!TOKEN.test(method)) throw new InvalidCheck('attributes.request.http.method must be an HTTP method');
  const target = http.path ?? '';
  if (!target.startsWith('/')) throw new InvalidCheck('attributes.request.http.path must be a path starting with /');
  const headers = headersOf(http);
  if (headers.host === undefined) {
    const host = http.host || headers[':authority'];
    if (typeof host === 'string' && host !== '') headers.host = host;
  }
  // HTTP/2 pseudo-fields (:authority, :method, :path, :scheme) are not the request's fields.
  for (const name of Object.keys(headers)) if (name.startsWith(':')) delete headers[name];
  // The body's size, for the body-size and GET-with-body checks, when the fields do not state it.
  const size = http.size ?? -1;
  if (size > 0 && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) {
    headers['content-length'] = String(size);
  }
  const stated = check.attributes?.source?.address?.socket_address?.address;
  let peer: string;
  if (stated === undefined || stated === '') peer = peerAddress(grpcPeer);
  else if (isIP(stated) === 0) throw new InvalidCheck('attributes.source.address.socket_address.address must be an IP');
  else peer = stated;
  return { method, target, headers, ip: clientIp(peer, headers['x-forwarded-for'], trusted) };
}

/** grpc-js names the caller `address:port` (IPv6 unbracketed), or a path for a Unix socket. */
function peerAddress(peer: string): string {
  const addr = peer.replace(/:\d+$/, '');
  return isIP(normalizeIp(addr)) === 0 ? '0.0.0.0' : normalizeIp(addr);
}

/**
 * The fields, names in lower case: the map Envoy sends (repeated lines already joined with commas), or
 * with encode_raw_headers the raw list, joined here the same way; a raw value is bytes, read as
 * node:http reads a field (latin1).
 */
function headersOf(
  http: NonNullable<NonNullable<CheckRequest['attributes']>['request']>['http'],
): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    out[key] = out[key] === undefined ? value : `${out[key]},${value}`;
  };
  const raw = http?.header_map?.headers;
  if (raw && raw.length > 0) {
    for (const h of raw) {
      if (!h.key) throw new InvalidCheck('attributes.request.http.header_map.headers[].key is required');
      add(h.key, h.value || (h.raw_value ? Buffer.from(h.raw_value).toString('latin1') : ''));
    }
  } else {
    for (const [name, value] of Object.entries(http?.headers ?? {})) add(name, value);
  }
  return out;
}

const option = (key: string, value: string | number): HeaderValueOption => ({
  header: { key: key.toLowerCase(), value: String(value) },
  append: { value: false },
  append_action: OVERWRITE_IF_EXISTS_OR_ADD,
});

function options(fields: readonly (string | number)[], skip?: Set<string>): HeaderValueOption[] {
  const out: HeaderValueOption[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = String(fields[i]).toLowerCase();
    if (!skip?.has(name)) out.push(option(name, fields[i + 1]));
  }
  return out;
}

/**
 * allow: OK with the signed identity for the service (set, overwriting any the client sent), the
 * client's credentials and any x-gateway-* field keygate did not write removed, and the client fields
 * (X-Request-Id, the rate-limit family) for the client's answer. answer: keygate's exact answer as the
 * denied response, under UNAUTHENTICATED for a 401 and PERMISSION_DENIED otherwise (Envoy answers any
 * non-OK status with the denied response, whatever its HTTP status).
 */
export function checkResponse(d: Decision, request: IncomingHttpHeaders): CheckResponse {
  if (d.kind === 'allow') {
    const upstream = options(d.upstreamFields);
    const written = new Set(upstream.map((o) => o.header.key!));
    const remove = Object.keys(request).filter(
      (name) => !written.has(name) && (CREDENTIALS.includes(name) || name.startsWith('x-gateway-')),
    );
    return {
      status: { code: grpcStatus.OK },
      ok_response: { headers: upstream, headers_to_remove: remove, response_headers_to_add: options(d.clientFields) },
    };
  }
  return {
    status: { code: d.status === 401 ? grpcStatus.UNAUTHENTICATED : grpcStatus.PERMISSION_DENIED },
    denied_response: { status: { code: d.status }, headers: options(d.fields, FRAMING), body: d.body.toString('utf8') },
  };
}

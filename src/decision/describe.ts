// The request a proxy asks about, read from its subrequest (docs/forward-auth.md, "Headers in"): the
// method, target and body size it describes in its own X-Forwarded-* / X-Original-* fields, the client
// address through TRUST_PROXY as for keygate's own proxy, and every other field as the client's.
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { clientIp, type TrustedProxies } from '../http/client-ip.js';
import type { DecisionRequest } from './decide.js';

/** Fields of the subrequest that describe it or its connection to us, never the client's request. */
const NOT_THE_CLIENTS = new Set([
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'expect',
  'x-keygate-proxy',
  // The proxy's description of the client's request (read below, never passed on as fields).
  'x-forwarded-for',
]);

/** A method node:http would parse: the gateway's own listener never sees another (its parser answers 400). */
export const METHODS = new Set(http.METHODS);
/** An origin-form target: no space or control byte (a request line could not carry one). */
export const ORIGIN_FORM = /^\/[^\x00-\x20\x7f]*$/;

export type Described = { ok: true; request: DecisionRequest } | { ok: false; message: string; field: string };

/**
 * The described request of `/auth` (target from X-Forwarded-Uri or X-Original-URI) or of `/envoy/...`
 * (`target` given: the path after the prefix; the method is the subrequest's own).
 */
export function describe(req: IncomingMessage, trusted: TrustedProxies, envoyTarget?: string): Described {
  const h = req.headers;
  let method = req.method ?? 'GET';
  let target = envoyTarget;
  let targetField = 'path';
  if (envoyTarget === undefined) {
    const m = one(h['x-forwarded-method']) ?? one(h['x-original-method']);
    if (m !== undefined) method = m;
    if (!METHODS.has(method))
      return refused(
        fieldName(h, 'x-forwarded-method', 'x-original-method'),
        'The original method is not an HTTP method.',
      );
    targetField = fieldName(h, 'x-forwarded-uri', 'x-original-uri');
    target = one(h['x-forwarded-uri']) ?? one(h['x-original-uri']);
    if (target === undefined || target === '')
      return refused(targetField, 'The original request target is required (X-Original-URI or X-Forwarded-Uri).');
  }
  if (!ORIGIN_FORM.test(target!))
    return refused(targetField, 'The original request target must be in origin form (a path and query).');
  const sizeField = fieldName(h, 'x-original-content-length', 'x-forwarded-content-length');
  const size = one(h[sizeField]);
  if (size !== undefined && size !== '' && !/^\d{1,15}$/.test(size))
    return refused(sizeField, 'The original body size must be a number of bytes.');
  const headers: IncomingHttpHeaders = {};
  for (const name in h) {
    if (NOT_THE_CLIENTS.has(name) || name.startsWith('x-original-') || name.startsWith('x-forwarded-')) continue;
    headers[name] = h[name];
  }
  // The described body size, so the body-size and GET-with-body checks run as in the proxy.
  if (size !== undefined && size !== '') headers['content-length'] = size;
  const ip = clientIp(req.socket.remoteAddress, h['x-forwarded-for'], trusted);
  return { ok: true, request: { method, target: target!, headers, ip } };
}

/**
 * A field the proxy sets once. node:http joins repeated lines of these with ", ", which no method, target
 * or size matches: sent twice, such a field is refused as malformed.
 */
const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(', ') : v);

/** The name of the field that says it (Traefik's, else nginx's), for a refusal that names it. */
const fieldName = (h: IncomingHttpHeaders, traefik: string, nginx: string) =>
  h[traefik] !== undefined ? traefik : nginx;

const refused = (field: string, message: string): Described => ({ ok: false, field, message });

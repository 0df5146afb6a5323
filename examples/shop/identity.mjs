// Who called, as keygate tells a service behind it (docs/identity.md): the X-Gateway-Identity header, a
// base64url JSON document (keyId, keyType, organizationId: the consumer, plan, scopes, metadata). With
// GATEWAY_SECRET set, the service also checks the HMAC signature over the request, so a request that did
// not come through the gateway is refused; without it the identity is read as sent (a demo on loopback).
// Node only: a real service would use @keygate/verifier, which adds a replay cache.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

const MAX_AGE_MS = 60_000;

/** The request's body, whole. */
async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * The caller of a forwarded request: `{ keyId, keyType, consumer, plan, scopes, metadata, verified }`,
 * or null when the identity is missing or, with a secret, its signature does not hold.
 */
export function callerOf(req, body, secret = process.env.GATEWAY_SECRET) {
  const identity = req.headers['x-gateway-identity'];
  if (typeof identity !== 'string') return null;
  if (secret) {
    const ts = req.headers['x-gateway-timestamp'];
    const signature = req.headers['x-gateway-signature'];
    const requestId = req.headers['x-request-id'];
    const digest = req.headers['content-digest'];
    if (typeof ts !== 'string' || typeof signature !== 'string' || typeof requestId !== 'string') return null;
    if (!/^\d{1,16}$/.test(ts) || !/^[0-9a-f]{64}$/.test(signature)) return null;
    if (Math.abs(Date.now() - Number(ts)) > MAX_AGE_MS) return null;
    // The signed string of docs/identity.md; a forwarded body adds its RFC 9530 digest on a last line.
    let signed = `${ts}\n${requestId}\n${req.method}\n${req.url}\n${identity}`;
    if (digest !== undefined) signed += `\n${digest}`;
    const expected = createHmac('sha256', secret).update(signed).digest();
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return null;
    const actual = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
    if (body.length > 0 ? digest !== actual : digest !== undefined) return null;
  }
  const id = JSON.parse(Buffer.from(identity, 'base64url').toString('utf8'));
  return {
    keyId: id.keyId,
    keyType: id.keyType,
    consumer: id.organizationId,
    plan: id.plan,
    scopes: id.scopes,
    ...(id.metadata ? { metadata: id.metadata } : {}),
    verified: Boolean(secret),
  };
}

/**
 * A service's request listener: /healthz answered, a request the gateway did not forward refused, and
 * the rest handed to `handle(req, res, { path, body, caller })`.
 */
export function forwardedOnly(handle) {
  return async (req, res) => {
    const body = await readBody(req);
    const path = req.url.split('?')[0];
    if (path === '/healthz') return reply(res, 200, { ok: true });
    const caller = callerOf(req, body);
    if (!caller) return reply(res, 401, { error: 'unauthenticated', detail: 'only requests keygate forwarded' });
    return handle(req, res, { path, body, caller });
  };
}

/** A JSON answer. */
export function reply(res, status, data) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(data));
}

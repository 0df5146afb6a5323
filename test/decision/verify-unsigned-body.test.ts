// A decision's signature is made without the body (forward-auth never sees it), and is marked so
// (src/verifier/digest.ts, UNSIGNED_BODY). The verifier accepts a body under it only when told to
// (acceptUnsignedBody; the reference backend's BACKEND_UNSIGNED_BODY=accept), and the mark neither
// weakens the gateway's own signatures nor can be added to or cut from one.
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IdentityVerificationError,
  UNSIGNED_BODY,
  contentDigest,
  createJwtVerifier,
  verifyHmacIdentity,
  type Identity,
} from '../../src/verifier/index.js';
import { encodeIdentity, sign } from '../../src/http/identity.js';
import { createJwtSigner } from '../../src/http/identity-jwt.js';
import { parseJwtKeys } from '../../src/config/jwt-keys.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

const SECRET = 'unit-secret-0123456789abcdef';
const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const identity: Identity = {
  keyId: 1000,
  keyType: 'workspace',
  organizationId: 1,
  userId: null,
  workspaceId: 100,
  role: 'ADMIN',
  scopes: ['tags:write'],
  plan: 'growth',
};
const target = '/v2/workspaces/100/tags';
const body = '{"name":"x"}';

/** The HMAC headers as the gateway (digest) or a decision (UNSIGNED_BODY) signs them. */
function headers(digest: string | undefined, rid = 'rid-1'): Record<string, string> {
  const id = encodeIdentity(identity);
  const ts = String(NOW);
  const h: Record<string, string> = {
    'x-gateway-identity': id,
    'x-gateway-timestamp': ts,
    'x-request-id': rid,
    'x-gateway-signature': sign(SECRET, ts, rid, 'POST', target, id, digest),
  };
  if (digest !== undefined && digest !== UNSIGNED_BODY) h['content-digest'] = digest;
  return h;
}
const hmac = (h: Record<string, string>, b: string | undefined, acceptUnsignedBody?: boolean) =>
  verifyHmacIdentity(SECRET, { method: 'POST', target, headers: h, body: b }, { now: () => NOW, acceptUnsignedBody });
const reason = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (e: unknown) => (e instanceof IdentityVerificationError ? e.reason : `threw ${String(e)}`),
  );

describe('the HMAC verifier and a decision’s mark', () => {
  it('accepts a decision without a body always, with one only when told to', async () => {
    const h = headers(UNSIGNED_BODY);
    expect(h['x-gateway-signature']).toMatch(/^unsigned-body:[0-9a-f]{64}$/);
    expect(await reason(hmac(h, undefined))).toBe('accepted');
    expect(await reason(hmac(h, ''))).toBe('accepted');
    expect(await reason(hmac(h, body))).toBe('body_unsigned');
    expect(await reason(hmac(h, body, true))).toBe('accepted');
    // A client's own Content-Digest beside a decision's signature changes nothing either way.
    expect(await reason(hmac({ ...h, 'content-digest': contentDigest('other') }, body, true))).toBe('accepted');
  });

  it('keeps the mark bound to the signature: neither cut from a decision nor added to the gateway’s', async () => {
    const decided = headers(UNSIGNED_BODY);
    const cut = { ...decided, 'x-gateway-signature': decided['x-gateway-signature'].slice(UNSIGNED_BODY.length + 1) };
    expect(await reason(hmac(cut, undefined))).toBe('bad_signature');
    const own = headers(undefined);
    const added = { ...own, 'x-gateway-signature': `${UNSIGNED_BODY}:${own['x-gateway-signature']}` };
    expect(await reason(hmac(added, body, true))).toBe('bad_signature');
    // The mark spelled as a Content-Digest under an unmarked signature is no digest at all.
    expect(await reason(hmac({ ...own, 'content-digest': UNSIGNED_BODY }, body, true))).toBe('malformed');
  });

  it('leaves the gateway’s own signatures as strict with acceptUnsignedBody as without', async () => {
    const withDigest = headers(contentDigest(body));
    expect(await reason(hmac(withDigest, body, true))).toBe('accepted');
    expect(await reason(hmac(withDigest, '{"name":"y"}', true))).toBe('digest_mismatch');
    expect(await reason(hmac(headers(undefined), body, true))).toBe('digest_missing');
  });
});

describe('the JWT verifier and a decision’s mark', () => {
  const keys = parseJwtKeys(
    JSON.stringify([{ ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'a' }]),
  );
  const signer = createJwtSigner({ keys, audience: 'svc' });
  const token = (contentDigest?: string) =>
    signer.sign({ identity, method: 'POST', target, requestId: 'r', contentDigest }, NOW);
  const verifier = (acceptUnsignedBody?: boolean) =>
    createJwtVerifier({ jwks: signer.jwks(), audience: 'svc', now: () => NOW, acceptUnsignedBody });
  const jwt = (t: string, b: string | undefined, accept?: boolean) =>
    reason(verifier(accept)({ 'x-gateway-jwt': t }, { method: 'POST', target, body: b }));

  it('accepts a decision’s token (cd = unsigned-body) with a body only when told to', async () => {
    const t = token(UNSIGNED_BODY);
    expect(await jwt(t, undefined)).toBe('accepted');
    expect(await jwt(t, body)).toBe('body_unsigned');
    expect(await jwt(t, body, true)).toBe('accepted');
  });

  it('leaves the gateway’s own tokens as strict', async () => {
    expect(await jwt(token(), body, true)).toBe('digest_missing');
    expect(await jwt(token(contentDigest(body)), '{"other":1}', true)).toBe('digest_mismatch');
  });
});

// The reference backend behind nginx: a POST decided by /auth, then sent on with its body as nginx does.
describe('the reference backend and a body after an auth_request decision', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ env: { DECISION_PORT: '0', BACKEND_UNSIGNED_BODY: 'accept' } });
  });
  afterAll(async () => s?.close());

  const decideThenSend = async (name: string) => {
    const payload = JSON.stringify({ name });
    const d = await fetch(`${s.app.decisionUrl}/auth`, {
      headers: {
        'x-keygate-proxy': 'nginx',
        'x-original-method': 'POST',
        'x-original-uri': target,
        'x-original-content-length': String(Buffer.byteLength(payload)),
        authorization: `Bearer ${K.wsAdmin}`,
      },
    });
    expect(d.status).toBe(200);
    const forwarded: Record<string, string> = { 'content-type': 'application/json' };
    for (const n of ['x-request-id', 'x-gateway-identity', 'x-gateway-timestamp', 'x-gateway-signature'])
      forwarded[n] = d.headers.get(n)!;
    return fetch(s.backendUrl + target, { method: 'POST', headers: forwarded, body: payload });
  };

  it('is accepted with BACKEND_UNSIGNED_BODY=accept, refused (401) without it', async () => {
    const ok = await decideThenSend('after-auth-request');
    expect(ok.status).toBe(201);
    const config = s.app.backend!.config;
    config.acceptUnsignedBody = false;
    try {
      expect((await decideThenSend('refused')).status).toBe(401);
    } finally {
      config.acceptUnsignedBody = true;
    }
  });

  it('leaves the gateway’s own path as it was: its POST is signed over its body', async () => {
    const r = await s.request('POST', target, { key: K.wsAdmin, body: { name: 'through-the-gateway' } });
    expect(r.status).toBe(201);
  });
});

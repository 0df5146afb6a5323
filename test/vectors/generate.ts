// Writes identity-hmac.json and identity-jwt.json beside this file: test vectors of the identity the
// gateway forwards (docs/decisions.md section 5 and its Content-Digest extension; the identity JWT), computed
// from the written rules with node:crypto alone, not with keygate's code, so that the suite can hold
// both the gateway's signer and the verifier to them. Run: npx tsx test/vectors/generate.ts
// (EdDSA tokens come out identical each run; ES256 signatures are randomised, so those change).
import { createHash, createHmac, createPrivateKey, sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);

const workspaceIdentity = {
  keyId: 1000, keyType: 'workspace', organizationId: 1, userId: null, workspaceId: 100, role: 'ADMIN',
  scopes: ['accounts:read', 'tags:read', 'tags:write'], plan: 'growth',
};
const partnerIdentity = {
  keyId: 1002, keyType: 'partner', organizationId: 1, userId: null, workspaceId: null, role: null, scopes: [], plan: 'growth',
};
const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const digestOf = (body: string) => `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;

// ------------------------------------------------------------------------------------------- HMAC

const SECRET = 'test-vector-gateway-secret-0123456789';

interface Signed { timestamp: string; requestId: string; method: string; target: string; identity: string; contentDigest: string | null }
function hmac(s: Signed) {
  const signingString = [s.timestamp, s.requestId, s.method, s.target, s.identity, ...(s.contentDigest === null ? [] : [s.contentDigest])].join('\n');
  return { signingString, signature: createHmac('sha256', SECRET).update(signingString).digest('hex') };
}
function signedHeaders(s: Signed, signature: string): Record<string, string> {
  return {
    'x-request-id': s.requestId,
    'x-gateway-identity': s.identity,
    'x-gateway-timestamp': s.timestamp,
    'x-gateway-signature': signature,
    ...(s.contentDigest === null ? {} : { 'content-digest': s.contentDigest }),
  };
}
function hmacCase(name: string, description: string, s: Signed, request: { method?: string; target?: string; body: string | null; headers?: (h: Record<string, string>) => Record<string, string> }, expected: object, extra: object = {}) {
  const { signingString, signature } = hmac(s);
  const headers = signedHeaders(s, signature);
  return {
    name, description, ...extra,
    request: { method: request.method ?? s.method, target: request.target ?? s.target, headers: request.headers ? request.headers(headers) : headers, body: request.body },
    gatewaySigned: { ...s, signingString, signature },
    expected,
  };
}

const getSigned: Signed = {
  timestamp: String(NOW - 1500), requestId: 'req-get-0001', method: 'GET', target: '/v2/workspaces/100/tags?limit=2&cursor=a%2Fb',
  identity: b64url(workspaceIdentity), contentDigest: null,
};
const postBody = '{"name":"vip","color":"#ff0000"}';
const postSigned: Signed = {
  timestamp: String(NOW - 800), requestId: 'req-post-0001', method: 'POST', target: '/v2/workspaces/100/tags',
  identity: b64url(workspaceIdentity), contentDigest: digestOf(postBody),
};
const partnerSigned: Signed = {
  timestamp: String(NOW - 10), requestId: 'req-v1-0001', method: 'GET', target: '/v1/accounts?page=1',
  identity: b64url(partnerIdentity), contentDigest: null,
};
const flip = (hex: string) => hex.slice(0, 10) + (hex[10] === '0' ? '1' : '0') + hex.slice(11);
const evil = '{"name":"evil","color":"#000000"}';

const hmacVectors = {
  description:
    'Identity headers of the keygate gateway (IDENTITY_FORMAT hmac or both). X-Gateway-Signature is the lower-case hex HMAC-SHA256, ' +
    'keyed with the secret (GATEWAY_SECRET) as UTF-8 bytes, of the signing string: timestamp, X-Request-Id, method, request target ' +
    '(path and query as forwarded), X-Gateway-Identity (base64url JSON), joined by "\\n"; when a body is forwarded, a sixth line: the ' +
    'Content-Digest header value, `sha-256=:<base64 SHA-256 of the body>:` (RFC 9530). A verifier refuses: a missing header, a timestamp ' +
    'more than maxAgeMs from now either way, a wrong signature (compare in constant time), a body whose digest differs from the signed ' +
    'Content-Digest, a body without a signed digest, and a signature it has already accepted within the window (replay). ' +
    'Bodies are given as UTF-8 text; null means no body. Cases with seenBefore: the verifier has already accepted this exact signature.',
  secret: SECRET,
  maxAgeMs: 60_000,
  now: NOW,
  cases: [
    hmacCase('get-without-body', 'A GET: no body, no Content-Digest, the five-line string of docs/decisions.md section 5.',
      getSigned, { body: null },
      { valid: true, identity: workspaceIdentity }),
    hmacCase('post-with-body', 'A POST with a JSON body: Content-Digest is sent and signed as a sixth line.', postSigned, { body: postBody },
      { valid: true, identity: workspaceIdentity }),
    hmacCase('partner-key-nulls', 'A /v1 partner key: null user, workspace and role; empty scopes.', partnerSigned, { body: null },
      { valid: true, identity: partnerIdentity }),
    hmacCase('bad-signature', 'One hex digit of the signature changed.', getSigned, { body: null, headers: (h) => ({ ...h, 'x-gateway-signature': flip(h['x-gateway-signature']) }) },
      { valid: false, reason: 'bad_signature' }),
    hmacCase('other-target', 'The signed headers presented with another workspace in the target.', getSigned, { body: null, target: '/v2/workspaces/101/tags?limit=2&cursor=a%2Fb' },
      { valid: false, reason: 'bad_signature' }),
    hmacCase('other-method', 'The signed headers of a GET presented on a DELETE.', getSigned, { body: null, method: 'DELETE' },
      { valid: false, reason: 'bad_signature' }),
    hmacCase('stale-timestamp', 'Correctly signed 61 s before now.', { ...getSigned, timestamp: String(NOW - 61_000) }, { body: null },
      { valid: false, reason: 'stale' }),
    hmacCase('timestamp-at-max-age', 'Correctly signed exactly 60 s before now: the window holds it (no tolerance is added to it).',
      { ...getSigned, timestamp: String(NOW - 60_000) }, { body: null },
      { valid: true, identity: workspaceIdentity }),
    hmacCase('timestamp-past-max-age', 'Correctly signed 60.001 s before now: one millisecond past the window.',
      { ...getSigned, timestamp: String(NOW - 60_001) }, { body: null },
      { valid: false, reason: 'stale' }),
    hmacCase('future-timestamp', 'Correctly signed 61 s after now.', { ...getSigned, timestamp: String(NOW + 61_000) }, { body: null },
      { valid: false, reason: 'stale' }),
    hmacCase('wrong-digest', 'The signed headers of the POST with another body: the body does not match Content-Digest.', postSigned, { body: evil },
      { valid: false, reason: 'digest_mismatch' }),
    hmacCase('digest-replaced', 'Another body with its own Content-Digest, under the signature of the original.', postSigned,
      { body: evil, headers: (h) => ({ ...h, 'content-digest': digestOf(evil) }) }, { valid: false, reason: 'bad_signature' }),
    hmacCase('digest-removed', 'The POST with its Content-Digest header removed: the signed string no longer matches.', postSigned,
      { body: postBody, headers: ({ 'content-digest': _, ...rest }) => rest }, { valid: false, reason: 'bad_signature' }),
    hmacCase('body-added', 'A body added to a body-less signed request: no signed digest covers it.', { ...getSigned, method: 'POST', target: '/v2/workspaces/100/tags' },
      { body: postBody }, { valid: false, reason: 'digest_missing' }),
    hmacCase('replayed', 'The valid POST a second time within the window.', postSigned, { body: postBody },
      { valid: false, reason: 'replayed' }, { seenBefore: true }),
    hmacCase('missing-signature', 'No X-Gateway-Signature header.', getSigned, { body: null, headers: ({ 'x-gateway-signature': _, ...rest }) => rest },
      { valid: false, reason: 'missing' }),
  ],
};

// -------------------------------------------------------------------------------------------- JWT

const KEYS = {
  ed: { kid: 'vector-ed25519', alg: 'EdDSA', jwk: { kty: 'OKP', crv: 'Ed25519', x: 't7kgvOApyGY2k1Zd0O1uPhK2fCxDr1zhnnDR_csm2RU', d: 'chcbaERzRJZq5gQaf3KfKNoLgCGpgaEYDv14aawNJI8' } },
  es: { kid: 'vector-p256', alg: 'ES256', jwk: { kty: 'EC', crv: 'P-256', x: '8yTUzunexH-gueRqOHp2hGgsRmxJNS2FF6KTZIhuTa4', y: 'seEl1qfYBll-sF7Fq_MSVyAtgpEwy4rF4cQvKnGzUHQ', d: 'SicVgd0T5-ZdFvTxCSwmrcpjhq1dPsGMl4AW4pXE9dU' } },
  /** Not in the JWKS: tokens it signs must be refused. */
  stranger: { kid: 'vector-unknown', alg: 'EdDSA', jwk: { kty: 'OKP', crv: 'Ed25519', x: 'g2PvC-Yt5tJl82Z68rt2fHCVDdlgPyhi5m-WHPPLLPc', d: 'WG7vMP1iSHfunBsspQI-sPjWw7R0vXYDpB7OjpGwMtc' } },
};
type KeyName = keyof typeof KEYS;
const publicOf = (k: KeyName) => {
  const { d: _, ...pub } = KEYS[k].jwk;
  return { ...pub, kid: KEYS[k].kid, alg: KEYS[k].alg, use: 'sig' };
};
const AUDIENCE = 'orders-service';
const iat = Math.floor(NOW / 1000) - 2;

function jws(k: KeyName, header: object, claims: object): string {
  const input = `${b64url(header)}.${b64url(claims)}`;
  const key = createPrivateKey({ key: KEYS[k].jwk, format: 'jwk' });
  const sig = KEYS[k].alg === 'EdDSA' ? sign(null, Buffer.from(input), key) : sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${sig.toString('base64url')}`;
}
const claimsFor = (method: string, target: string, body: string | null, over: object = {}) => ({
  iss: 'keygate', aud: AUDIENCE, sub: `key:${workspaceIdentity.keyId}`, iat, exp: iat + 60,
  jti: `vector-${method.toLowerCase()}-${target.length}`, htm: method, htu: target,
  ...(body === null ? {} : { cd: digestOf(body) }), rid: 'req-jwt-0001', kg: workspaceIdentity, ...over,
});
const token = (k: KeyName, claims: object) => jws(k, { alg: KEYS[k].alg, kid: KEYS[k].kid, typ: 'JWT' }, claims);
function jwtCase(name: string, description: string, tok: string, request: { method: string; target: string; body: string | null; header?: 'authorization' }, expected: object, extra: object = {}) {
  const headers = request.header === 'authorization' ? { authorization: `Bearer ${tok}` } : { 'x-gateway-jwt': tok };
  return { name, description, ...extra, header: request.header ?? 'x-gateway-jwt', request: { method: request.method, target: request.target, headers, body: request.body }, expected };
}

const getTarget = '/v2/workspaces/100/tags?limit=2';
const getClaims = claimsFor('GET', getTarget, null);
const getToken = token('ed', getClaims);
const postClaims = claimsFor('POST', '/v2/workspaces/100/tags', postBody);
const postToken = token('es', postClaims);
const [gh, gp, gs] = getToken.split('.');
const tamperedPayload = b64url({ ...getClaims, kg: { ...workspaceIdentity, role: 'OWNER' } });
const alteredSig = gs.slice(0, 20) + (gs[20] === 'A' ? 'B' : 'A') + gs.slice(21);

const jwtVectors = {
  description:
    'The identity JWT of the keygate gateway (IDENTITY_FORMAT jwt or both), sent in X-Gateway-JWT or as Authorization: Bearer ' +
    '(IDENTITY_JWT_HEADER). Verify with the JWKS (the gateway serves it at ADMIN_PORT /.well-known/jwks.json): algorithms EdDSA ' +
    '(Ed25519) and ES256 only; iss "keygate"; aud equal to the configured audience; iat no older than 60 s and exp in the future, each with one ' +
    'clock tolerance of 5 s (now is given: a token is valid while now - iat <= 65 and now < exp + 5); jti a non-empty string; htm equal to the request method and htu to the request target (path and query); when cd is present, the body\'s ' +
    'Content-Digest (`sha-256=:<base64 SHA-256>:`, RFC 9530) equals it, and a body without cd is refused. kg is the identity. ' +
    'A replay cache keyed by jti refuses a token seen before. signingKeys are the private halves, for test use only: EdDSA is ' +
    'deterministic, so a signer given the same header and claims must produce the EdDSA tokens below byte for byte.',
  now: NOW,
  audience: AUDIENCE,
  jwks: { keys: [publicOf('ed'), publicOf('es')] },
  signingKeys: [KEYS.ed, KEYS.es].map((k) => ({ ...k.jwk, kid: k.kid, alg: k.alg })),
  cases: [
    jwtCase('get-eddsa', 'A GET without body, EdDSA, X-Gateway-JWT.', getToken, { method: 'GET', target: getTarget, body: null },
      { valid: true, identity: workspaceIdentity, claims: getClaims }),
    jwtCase('post-es256-with-digest', 'A POST with a body, ES256; cd is the body\'s Content-Digest.', postToken, { method: 'POST', target: '/v2/workspaces/100/tags', body: postBody },
      { valid: true, identity: workspaceIdentity, claims: postClaims }),
    jwtCase('authorization-bearer', 'The same GET token carried as Authorization: Bearer.', getToken, { method: 'GET', target: getTarget, body: null, header: 'authorization' },
      { valid: true, identity: workspaceIdentity, claims: getClaims }),
    jwtCase('bad-signature', 'One character in the middle of the signature changed.', `${gh}.${gp}.${alteredSig}`, { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'bad_signature' }),
    jwtCase('tampered-claims', 'kg.role raised to OWNER, the original signature kept.', `${gh}.${tamperedPayload}.${gs}`, { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'bad_signature' }),
    jwtCase('expired', 'Signed 120 s before now: exp has passed.', token('ed', { ...getClaims, iat: iat - 118, exp: iat - 58 }), { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'stale' }),
    jwtCase('age-64s', 'Issued 64 s before now (exp = iat + 60, 4 s past): within the 60 s and the one 5 s tolerance.',
      token('ed', { ...getClaims, iat: NOW / 1000 - 64, exp: NOW / 1000 - 4 }), { method: 'GET', target: getTarget, body: null },
      { valid: true, identity: workspaceIdentity, claims: { ...getClaims, iat: NOW / 1000 - 64, exp: NOW / 1000 - 4 } }),
    jwtCase('age-65s', 'Issued 65 s before now (exp = iat + 60): past the 60 s and the one 5 s tolerance.',
      token('ed', { ...getClaims, iat: NOW / 1000 - 65, exp: NOW / 1000 - 5 }), { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'stale' }),
    jwtCase('age-66s-long-exp', 'Issued 66 s before now with an exp still ahead: iat itself is too old (60 s plus 5 s tolerance, once).',
      token('ed', { ...getClaims, iat: NOW / 1000 - 66, exp: NOW / 1000 + 54 }), { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'stale' }),
    jwtCase('age-70s-long-exp', 'Issued 70 s before now with an exp still ahead.',
      token('ed', { ...getClaims, iat: NOW / 1000 - 70, exp: NOW / 1000 + 50 }), { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'stale' }),
    jwtCase('jti-object', 'jti is an object, not a string: a replay cache cannot key on it.',
      token('ed', { ...getClaims, jti: { id: 'vector' } }), { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'malformed' }),
    jwtCase('jti-number', 'jti is a number, not a string.',
      token('ed', { ...getClaims, jti: 7 }), { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'malformed' }),
    jwtCase('wrong-digest', 'The POST token with another body.', postToken, { method: 'POST', target: '/v2/workspaces/100/tags', body: evil },
      { valid: false, reason: 'digest_mismatch' }),
    jwtCase('body-without-digest', 'The body-less GET token on a request that carries a body.', getToken, { method: 'GET', target: getTarget, body: postBody },
      { valid: false, reason: 'digest_missing' }),
    jwtCase('other-target', 'The GET token presented for another workspace.', getToken, { method: 'GET', target: '/v2/workspaces/101/tags?limit=2', body: null },
      { valid: false, reason: 'wrong_request' }),
    jwtCase('wrong-audience', 'Signed for another audience.', token('ed', { ...getClaims, aud: 'billing-service' }), { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'wrong_audience' }),
    jwtCase('unknown-kid', 'Signed by a key the JWKS does not hold.', token('stranger', getClaims), { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'bad_signature' }),
    jwtCase('alg-none', 'An unsecured token (alg none).', `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(getClaims)}.`, { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'malformed' }),
    jwtCase('replayed', 'The valid GET token a second time.', getToken, { method: 'GET', target: getTarget, body: null },
      { valid: false, reason: 'replayed' }, { seenBefore: true }),
  ],
};

writeFileSync(join(here, 'identity-hmac.json'), JSON.stringify(hmacVectors, null, 2) + '\n');
writeFileSync(join(here, 'identity-jwt.json'), JSON.stringify(jwtVectors, null, 2) + '\n');
console.log('wrote identity-hmac.json and identity-jwt.json');

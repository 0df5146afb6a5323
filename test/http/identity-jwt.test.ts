// The identity JWT (IDENTITY_FORMAT jwt|both): its settings, the signer (src/http/identity-jwt.ts),
// the verifier services use (src/verifier/index.ts), key rotation through the JWKS, and a real stack
// whose forwarded request carries a token the verifier accepts with the JWKS of the admin port.
import { createPrivateKey, generateKeyPairSync, sign as cryptoSign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt, decodeProtectedHeader, jwtVerify, createLocalJWKSet } from 'jose';
import { loadSettings, settingsSchema } from '../../src/config/settings.js';
import { createJwtSigner, jwtSignerFromSettings, type JwtSigner } from '../../src/http/identity-jwt.js';
import { parseJwtKeys } from '../../src/config/jwt-keys.js';
import type { Identity } from '../../src/http/identity.js';
import {
  createJwtVerifier,
  contentDigest,
  createMemoryReplayCache,
  IdentityVerificationError,
  verifyHmacIdentity,
} from '../../src/verifier/index.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K } from '../fixtures/seed.js';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const identity: Identity = {
  keyId: 1000,
  keyType: 'workspace',
  organizationId: 1,
  userId: null,
  workspaceId: 100,
  role: 'ADMIN',
  scopes: ['tags:read', 'tags:write'],
  plan: 'growth',
};

function ed25519Jwk(kid: string) {
  return { ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid };
}
function p256Pem() {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' })
    .privateKey.export({ format: 'pem', type: 'pkcs8' })
    .toString();
}
const keysText = (...entries: object[]) => JSON.stringify(entries);

/** The reason a verification is refused with (fails the test if it is accepted). */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof IdentityVerificationError) return err.reason;
    throw err;
  }
  throw new Error('accepted');
}

describe('settings: IDENTITY_FORMAT, IDENTITY_JWT_*', () => {
  const base = { DATABASE_URL: 'postgres://u@127.0.0.1/db', GATEWAY_SECRET: 'a-gateway-secret-of-length' };
  const error = (env: Record<string, string>, mode: 'start' | 'gateway' = 'gateway') => {
    try {
      loadSettings({ ...base, ...env }, mode);
    } catch (err) {
      return (err as Error).message;
    }
    return 'no error';
  };

  it('defaults to the HMAC headers and the X-Gateway-JWT header, no keys, no signer', () => {
    const s = loadSettings(base, 'gateway');
    expect([s.IDENTITY_FORMAT, s.IDENTITY_JWT_HEADER, s.IDENTITY_JWT_KEYS, s.IDENTITY_JWT_AUDIENCE]).toEqual([
      'hmac',
      'x-gateway-jwt',
      undefined,
      undefined,
    ]);
    expect(jwtSignerFromSettings(s, 'gateway')).toBeNull();
  });

  it('parses keys given as PEM PKCS8 and as JWK, the first signing', () => {
    const s = loadSettings(
      {
        ...base,
        IDENTITY_FORMAT: 'both',
        IDENTITY_JWT_KEYS: keysText({ kid: 'new', pem: p256Pem() }, ed25519Jwk('old')),
      },
      'gateway',
    );
    expect(s.IDENTITY_JWT_KEYS!.map((k) => [k.kid, k.alg])).toEqual([
      ['new', 'ES256'],
      ['old', 'EdDSA'],
    ]);
    const signer = jwtSignerFromSettings(s, 'gateway')!;
    expect(
      decodeProtectedHeader(signer.sign({ identity, method: 'GET', target: '/v2/x', requestId: 'r' }, NOW)),
    ).toEqual({ alg: 'ES256', kid: 'new', typ: 'JWT' });
    expect(signer.jwks().keys.map((k) => k.kid)).toEqual(['new', 'old']);
    for (const k of signer.jwks().keys) expect(k).not.toHaveProperty('d');
  });

  it('takes a JWK Set written as a JSON object in CONFIG_FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kg-jwt-'));
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({ IDENTITY_FORMAT: 'jwt', IDENTITY_JWT_KEYS: { keys: [ed25519Jwk('from-file')] } }),
    );
    const s = loadSettings({ ...base, CONFIG_FILE: file }, 'gateway');
    expect(s.IDENTITY_JWT_KEYS!.map((k) => k.kid)).toEqual(['from-file']);
  });

  it('refuses bad values with one line naming the setting', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
    const sec1 = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ format: 'pem', type: 'sec1' })
      .toString();
    const { d: _d, ...publicOnly } = ed25519Jwk('pub');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' })
      .privateKey.export({ format: 'pem', type: 'pkcs8' })
      .toString();
    expect(error({ IDENTITY_FORMAT: 'jws' })).toMatch(/^setting IDENTITY_FORMAT: /);
    expect(error({ IDENTITY_JWT_HEADER: 'x-jwt' })).toMatch(/^setting IDENTITY_JWT_HEADER: /);
    expect(error({ IDENTITY_FORMAT: 'jwt' })).toBe(
      'setting IDENTITY_JWT_KEYS: required when IDENTITY_FORMAT is jwt for `npm run gateway`',
    );
    expect(error({ IDENTITY_JWT_KEYS: 'not json' })).toMatch(/^setting IDENTITY_JWT_KEYS: must be JSON/);
    expect(error({ IDENTITY_JWT_KEYS: '[]' })).toMatch(/^setting IDENTITY_JWT_KEYS: holds no key/);
    expect(error({ IDENTITY_JWT_KEYS: keysText({ ...ed25519Jwk('x'), kid: undefined }) })).toMatch(
      /^setting IDENTITY_JWT_KEYS: key 0: kid is required/,
    );
    expect(error({ IDENTITY_JWT_KEYS: keysText(ed25519Jwk('a'), ed25519Jwk('a')) })).toBe(
      'setting IDENTITY_JWT_KEYS: duplicate kid a',
    );
    expect(error({ IDENTITY_JWT_KEYS: keysText({ ...rsa, kid: 'r' }) })).toBe(
      'setting IDENTITY_JWT_KEYS: key r: must be Ed25519 (EdDSA) or P-256 (ES256), not rsa',
    );
    expect(error({ IDENTITY_JWT_KEYS: keysText({ kid: 'e', pem: p384 }) })).toMatch(
      /key e: must be Ed25519 \(EdDSA\) or P-256 \(ES256\), not ec secp384r1/,
    );
    expect(error({ IDENTITY_JWT_KEYS: keysText(publicOnly) })).toMatch(/key pub: the JWK must be a private key/);
    expect(error({ IDENTITY_JWT_KEYS: keysText({ kid: 's', pem: sec1 }) })).toMatch(
      /key s: pem must be an unencrypted PKCS8/,
    );
    expect(error({ IDENTITY_JWT_KEYS: keysText({ kid: 's', pem: p256Pem(), alg: 'ES256' }) })).toMatch(
      /key s: unknown field alg beside pem/,
    );
    expect(error({ IDENTITY_JWT_KEYS: keysText({ ...ed25519Jwk('k'), alg: 'ES256' }) })).toMatch(
      /key k: alg ES256 does not fit the key \(EdDSA\)/,
    );
    const broken = { ...ed25519Jwk('b'), d: 'AAAA' };
    expect(error({ IDENTITY_JWT_KEYS: keysText(broken) })).toBe(
      'setting IDENTITY_JWT_KEYS: key b: not a valid private key',
    );
    expect(error({ IDENTITY_JWT_AUDIENCE: '', IDENTITY_FORMAT: 'jwt' })).toMatch(/IDENTITY_JWT_KEYS: required/); // empty env = unset
    // All-in-one forwarding to its own backend needs the HMAC headers that backend verifies.
    expect(error({ IDENTITY_FORMAT: 'jwt' }, 'start')).toMatch(/^setting IDENTITY_FORMAT: jwt alone/);
    expect(error({ IDENTITY_FORMAT: 'jwt', UPSTREAM_URL: 'http://127.0.0.1:3000' }, 'start')).toBe('no error');
  });

  it('never puts key material in a message', () => {
    const jwk = ed25519Jwk('k');
    for (const bad of [
      { ...jwk, d: jwk.d + 'x', kid: 'k' },
      { ...jwk, crv: 'X25519' },
    ]) {
      const msg = error({ IDENTITY_JWT_KEYS: keysText(bad) });
      expect(msg).toMatch(/^setting IDENTITY_JWT_KEYS: /);
      expect(msg).not.toContain(jwk.d as string);
    }
  });

  it('all-in-one without keys generates an Ed25519 key per start; a standalone gateway never does', () => {
    const s = settingsSchema.parse({ IDENTITY_FORMAT: 'both' });
    const a = jwtSignerFromSettings(s, 'start')!;
    const b = jwtSignerFromSettings(s, 'start')!;
    expect(a.jwks().keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(a.jwks().keys[0].kid).not.toBe(b.jwks().keys[0].kid);
    expect(() => jwtSignerFromSettings(s, 'gateway')).toThrow(/setting IDENTITY_JWT_KEYS: required/);
  });
});

describe('signer and verifier', () => {
  const input = {
    identity,
    method: 'POST',
    target: '/v2/workspaces/100/tags?x=1',
    requestId: 'req-1',
    contentDigest: contentDigest('{"name":"a"}'),
  };
  const body = '{"name":"a"}';

  it('round trip, EdDSA and ES256, either header; the claims are the documented ones', async () => {
    for (const [keys, header] of [
      [parseJwtKeys(keysText(ed25519Jwk('e'))), 'x-gateway-jwt'],
      [parseJwtKeys(keysText({ kid: 'p', pem: p256Pem() })), 'authorization'],
    ] as const) {
      const signer = createJwtSigner({ keys, audience: 'orders', header });
      const token = signer.sign(input, NOW);
      const verify = createJwtVerifier({ jwks: signer.jwks(), audience: 'orders', header, now: () => NOW });
      expect(
        await verify({ [signer.header]: signer.headerValue(token) }, { method: 'POST', target: input.target, body }),
      ).toEqual(identity);
      expect(signer.headerValue(token)).toBe(header === 'authorization' ? `Bearer ${token}` : token);
      const claims = decodeJwt(token);
      expect(claims).toEqual({
        iss: 'keygate',
        aud: 'orders',
        sub: 'key:1000',
        iat: NOW / 1000,
        exp: NOW / 1000 + 60,
        jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
        htm: 'POST',
        htu: '/v2/workspaces/100/tags?x=1',
        cd: input.contentDigest,
        rid: 'req-1',
        kg: identity,
      });
      // Plain jose, as any service would use it, accepts the token too.
      await expect(
        jwtVerify(token, createLocalJWKSet(signer.jwks()), {
          issuer: 'keygate',
          audience: 'orders',
          currentDate: new Date(NOW),
        }),
      ).resolves.toBeTruthy();
    }
  });

  it('every token has its own jti; without an audience there is no aud; without a body no cd', () => {
    const signer = createJwtSigner({ keys: parseJwtKeys(keysText(ed25519Jwk('e'))) });
    const a = decodeJwt(signer.sign({ ...input, contentDigest: undefined }, NOW));
    const b = decodeJwt(signer.sign({ ...input, contentDigest: undefined }, NOW));
    expect(a.jti).not.toBe(b.jti);
    expect(a).not.toHaveProperty('aud');
    expect(a).not.toHaveProperty('cd');
  });

  it('rotation: a token of the old key verifies while both keys are published, and not after', async () => {
    const oldKey = ed25519Jwk('2026-10');
    const newKey = ed25519Jwk('2026-11');
    const before = createJwtSigner({ keys: parseJwtKeys(keysText(oldKey)) });
    const during = createJwtSigner({ keys: parseJwtKeys(keysText(newKey, oldKey)) });
    const after = createJwtSigner({ keys: parseJwtKeys(keysText(newKey)) });
    const oldToken = before.sign(input, NOW);
    const newToken = during.sign(input, NOW);
    expect(decodeProtectedHeader(newToken).kid).toBe('2026-11');
    const req = { method: 'POST', target: input.target, body };
    const verifyWith = (s: JwtSigner) => createJwtVerifier({ jwks: s.jwks(), anyAudience: true, now: () => NOW });
    expect(await verifyWith(during)({ 'x-gateway-jwt': oldToken }, req)).toEqual(identity);
    expect(await verifyWith(during)({ 'x-gateway-jwt': newToken }, req)).toEqual(identity);
    expect(await refusal(verifyWith(after)({ 'x-gateway-jwt': oldToken }, req))).toBe('bad_signature');
  });

  it('an expired token is refused; one within its minute is not', async () => {
    const signer = createJwtSigner({ keys: parseJwtKeys(keysText(ed25519Jwk('e'))) });
    const token = signer.sign(input, NOW);
    const at = (t: number) =>
      createJwtVerifier({ jwks: signer.jwks(), anyAudience: true, now: () => t, clockToleranceSec: 0 })(
        { 'x-gateway-jwt': token },
        { method: 'POST', target: input.target, body },
      );
    expect(await at(NOW + 59_000)).toEqual(identity);
    expect(await refusal(at(NOW + 61_000))).toBe('stale');
  });

  it('age: 60 s and one 5 s tolerance, never the tolerance twice; jti must be a string', async () => {
    const jwk = ed25519Jwk('e');
    const signer = createJwtSigner({ keys: parseJwtKeys(keysText(jwk)) });
    const req = { method: 'POST', target: input.target, body };
    const verifyAt = (t: number, tolerance?: number) =>
      createJwtVerifier({ jwks: signer.jwks(), anyAudience: true, now: () => t, clockToleranceSec: tolerance });
    // The gateway's own token: exp = iat + 60, so the tolerance reaches 64 s and not 65.
    const token = signer.sign(input, NOW);
    expect(await verifyAt(NOW + 64_000)({ 'x-gateway-jwt': token }, req)).toEqual(identity);
    expect(await refusal(verifyAt(NOW + 65_000)({ 'x-gateway-jwt': token }, req))).toBe('stale');
    // A token whose exp is further ahead than the gateway writes: its iat alone must bound its age.
    const [h, p] = token.split('.');
    const claims = decodeJwt(token);
    const resign = (over: object) => {
      const payload = Buffer.from(JSON.stringify({ ...claims, ...over })).toString('base64url');
      const key = createPrivateKey({ key: jwk, format: 'jwk' });
      return `${h}.${payload}.${cryptoSign(null, Buffer.from(`${h}.${payload}`), key).toString('base64url')}`;
    };
    const longLived = resign({ exp: (claims.exp as number) + 600 });
    expect(p).not.toBe(longLived.split('.')[1]);
    expect(await verifyAt(NOW + 65_000)({ 'x-gateway-jwt': longLived }, req)).toEqual(identity);
    expect(await refusal(verifyAt(NOW + 66_000)({ 'x-gateway-jwt': longLived }, req))).toBe('stale');
    expect(await refusal(verifyAt(NOW + 70_000)({ 'x-gateway-jwt': longLived }, req))).toBe('stale');
    expect(await verifyAt(NOW + 60_000, 0)({ 'x-gateway-jwt': longLived }, req)).toEqual(identity);
    expect(await refusal(verifyAt(NOW + 61_000, 0)({ 'x-gateway-jwt': longLived }, req))).toBe('stale');
    for (const jti of [{ id: 'x' }, 7, '', ['a']]) {
      expect(await refusal(verifyAt(NOW)({ 'x-gateway-jwt': resign({ jti }) }, req)), JSON.stringify(jti)).toBe(
        'malformed',
      );
    }
  });

  it('a replay within the clock tolerance after exp is still refused (the cache keeps the token as long as it verifies)', async () => {
    const signer = createJwtSigner({ keys: parseJwtKeys(keysText(ed25519Jwk('e'))) });
    const token = signer.sign(input, NOW);
    let t = NOW + 1_000;
    const verify = createJwtVerifier({
      jwks: signer.jwks(),
      anyAudience: true,
      now: () => t,
      replay: createMemoryReplayCache(() => t),
    });
    const req = { method: 'POST', target: input.target, body };
    expect(await verify({ 'x-gateway-jwt': token }, req)).toEqual(identity);
    // exp passed 2 s ago; the 5 s tolerance still lets the token verify, so it must still be remembered.
    t = NOW + 62_000;
    expect(await refusal(verify({ 'x-gateway-jwt': token }, req))).toBe('replayed');
  });

  it('tampered claims, another request, another body, another audience, a replay: refused', async () => {
    const signer = createJwtSigner({ keys: parseJwtKeys(keysText(ed25519Jwk('e'))), audience: 'orders' });
    const token = signer.sign(input, NOW);
    const [h, , s] = token.split('.');
    const claims = decodeJwt(token);
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, kg: { ...identity, role: 'OWNER', workspaceId: 101 } })).toString('base64url')}.${s}`;
    const verify = createJwtVerifier({
      jwks: signer.jwks(),
      audience: 'orders',
      now: () => NOW,
      replay: createMemoryReplayCache(() => NOW),
    });
    const req = { method: 'POST', target: input.target, body };
    expect(await refusal(verify({ 'x-gateway-jwt': tampered }, req))).toBe('bad_signature');
    expect(await refusal(verify({ 'x-gateway-jwt': token }, { ...req, target: '/v2/workspaces/101/tags?x=1' }))).toBe(
      'wrong_request',
    );
    expect(await refusal(verify({ 'x-gateway-jwt': token }, { ...req, method: 'PUT' }))).toBe('wrong_request');
    expect(await refusal(verify({ 'x-gateway-jwt': token }, { ...req, body: '{"name":"b"}' }))).toBe('digest_mismatch');
    expect(await refusal(verify({ 'x-gateway-jwt': token }, { ...req, body: undefined }))).toBe('body_required');
    expect(
      await refusal(
        createJwtVerifier({ jwks: signer.jwks(), audience: 'billing', now: () => NOW })(
          { 'x-gateway-jwt': token },
          req,
        ),
      ),
    ).toBe('wrong_audience');
    expect(await refusal(verify({}, req))).toBe('missing');
    expect(await verify({ 'X-Gateway-JWT': token }, req)).toEqual(identity);
    expect(await refusal(verify({ 'x-gateway-jwt': token }, req))).toBe('replayed');
  });

  it('a JWKS that cannot be fetched is an error of the service (5xx), not a refused identity', async () => {
    const signer = createJwtSigner({ keys: parseJwtKeys(keysText(ed25519Jwk('e'))) });
    const verify = createJwtVerifier({
      jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
      anyAudience: true,
      now: () => NOW,
    });
    const err = await verify(
      { 'x-gateway-jwt': signer.sign(input, NOW) },
      { method: 'POST', target: input.target, body },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(IdentityVerificationError);
  });
});

describe('through a real stack: the forwarded JWT verifies with the JWKS of the admin port', () => {
  let up: Recorder;
  let stack: Stack;
  let hmacOnly: Stack;
  let both: Stack;
  let bothRecorded: Stack;
  beforeAll(async () => {
    up = await startRecorder();
    stack = await startStack({
      env: { IDENTITY_FORMAT: 'jwt', IDENTITY_JWT_AUDIENCE: 'recorder' },
      upstreamOverride: up.url,
    });
    hmacOnly = await startStack({ upstreamOverride: up.url });
    // Its own reference backend behind it: that backend verifies the HMAC headers, the JWT rides along.
    both = await startStack({ env: { IDENTITY_FORMAT: 'both', IDENTITY_JWT_HEADER: 'authorization' } });
    bothRecorded = await startStack({
      env: { IDENTITY_FORMAT: 'both', IDENTITY_JWT_HEADER: 'authorization' },
      upstreamOverride: up.url,
    });
  });
  afterAll(async () => {
    await stack?.close();
    await hmacOnly?.close();
    await both?.close();
    await bothRecorded?.close();
    await up?.close();
  });

  it('serves the public keys at /.well-known/jwks.json, and nothing there when the format is hmac', async () => {
    const r = await fetch(`${stack.adminUrl}/.well-known/jwks.json`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/jwk-set+json');
    const doc = (await r.json()) as { keys: Record<string, unknown>[] };
    expect(doc.keys).toHaveLength(1);
    expect(doc.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(doc.keys[0]).not.toHaveProperty('d');
    expect((await fetch(`${hmacOnly.adminUrl}/.well-known/jwks.json`)).status).toBe(404);
  });

  it('a GET and a POST reach the upstream with a token the verifier accepts', async () => {
    const verify = createJwtVerifier({ jwksUrl: `${stack.adminUrl}/.well-known/jwks.json`, audience: 'recorder' });
    const get = await stack.request('GET', '/v2/workspaces/100/tags?limit=2', { key: K.wsAdmin, ip: '10.77.0.1' });
    expect(get.status).toBe(200);
    const seenGet = up.seen.at(-1)!;
    expect(seenGet.headers['x-gateway-signature']).toBeUndefined(); // jwt alone: no HMAC headers
    const got = await verify(seenGet.headers, { method: seenGet.method, target: seenGet.url, body: seenGet.body });
    expect(got).toMatchObject({
      keyId: 1000,
      keyType: 'workspace',
      organizationId: 1,
      workspaceId: 100,
      role: 'ADMIN',
      plan: 'growth',
    });

    const body = JSON.stringify({ name: `jwt-${Date.now()}` });
    const post = await stack.request('POST', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.77.0.1', body });
    expect(post.status).toBe(200);
    const seenPost = up.seen.at(-1)!;
    expect(decodeJwt(seenPost.headers['x-gateway-jwt'] as string).cd).toBe(contentDigest(body));
    expect(await verify(seenPost.headers, { method: 'POST', target: seenPost.url, body: seenPost.body })).toMatchObject(
      { keyId: 1000 },
    );
    expect(
      await refusal(verify(seenPost.headers, { method: 'POST', target: seenPost.url, body: '{"name":"evil"}' })),
    ).toBe('digest_mismatch');
  });

  it('the default sends the HMAC headers and no JWT', async () => {
    expect((await hmacOnly.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.77.0.2' })).status).toBe(
      200,
    );
    const seen = up.seen.at(-1)!;
    expect(seen.headers['x-gateway-signature']).toMatch(/^[0-9a-f]{64}$/);
    expect(seen.headers['x-gateway-jwt']).toBeUndefined();
    expect(seen.headers.authorization).toBeUndefined();
  });

  it('both: the reference backend still answers, and one forwarded request satisfies both verifiers', async () => {
    expect((await both.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.77.0.3' })).status).toBe(
      200,
    );

    const body = JSON.stringify({ name: `both-${Date.now()}` });
    expect(
      (await bothRecorded.request('POST', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.77.0.3', body })).status,
    ).toBe(200);
    const seen = up.seen.at(-1)!;
    expect(seen.headers.authorization).toMatch(/^Bearer [A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/); // the JWT, not the client's key
    const request = { method: 'POST', target: seen.url, body: seen.body };
    const verifyJwt = createJwtVerifier({
      jwksUrl: `${bothRecorded.adminUrl}/.well-known/jwks.json`,
      anyAudience: true,
      header: 'authorization',
    });
    const fromJwt = await verifyJwt(seen.headers, request);
    const fromHmac = await verifyHmacIdentity(bothRecorded.gatewaySecret, { ...request, headers: seen.headers });
    expect(fromJwt).toEqual(fromHmac);
    expect(fromJwt).toMatchObject({ keyId: 1000, workspaceId: 100 });
  });
});

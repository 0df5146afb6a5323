// The shipped verifier binds a token to the service it is meant for (issue 20, defect 11): without an
// `audience` it refuses to be built, unless the caller says in code that any audience will do. A token
// with no `aud` (a gateway without IDENTITY_JWT_AUDIENCE) is then refused by a verifier that names one.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createJwtSigner } from '../../src/http/identity-jwt.js';
import { parseJwtKeys } from '../../src/config/jwt-keys.js';
import { createJwtVerifier, IdentityVerificationError } from '../../src/verifier/index.js';
import type { Identity } from '../../src/http/identity.js';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const identity: Identity = {
  keyId: 1000,
  keyType: 'workspace',
  organizationId: 1,
  userId: null,
  workspaceId: 100,
  role: 'ADMIN',
  scopes: ['tags:read'],
  plan: 'growth',
};
const keys = parseJwtKeys(
  JSON.stringify([{ ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'a' }]),
);
const request = { method: 'GET', target: '/v2/workspaces/100/tags' };
const input = { identity, method: 'GET', target: request.target, requestId: 'r1' };

describe('createJwtVerifier and the audience', () => {
  it('refuses to be built without an audience, naming the option', () => {
    const signer = createJwtSigner({ keys });
    expect(() => createJwtVerifier({ jwks: signer.jwks(), now: () => NOW })).toThrow(/audience/);
  });

  it('with an audience, refuses a token that has none and one for another service', async () => {
    const verify = createJwtVerifier({ jwks: createJwtSigner({ keys }).jwks(), audience: 'orders', now: () => NOW });
    const none = createJwtSigner({ keys }).sign(input, NOW);
    const billing = createJwtSigner({ keys, audience: 'billing' }).sign(input, NOW);
    const orders = createJwtSigner({ keys, audience: 'orders' }).sign(input, NOW);
    const reason = (p: Promise<unknown>) =>
      p.then(
        () => 'accepted',
        (e: unknown) => (e instanceof IdentityVerificationError ? e.reason : String(e)),
      );
    expect(await reason(verify({ 'x-gateway-jwt': none }, request))).toMatch(/wrong_audience|missing/);
    expect(await reason(verify({ 'x-gateway-jwt': billing }, request))).toBe('wrong_audience');
    expect(await verify({ 'x-gateway-jwt': orders }, request)).toEqual(identity);
  });

  it('accepts any audience only when told so in code', async () => {
    const verify = createJwtVerifier({ jwks: createJwtSigner({ keys }).jwks(), anyAudience: true, now: () => NOW });
    expect(
      await verify({ 'x-gateway-jwt': createJwtSigner({ keys, audience: 'billing' }).sign(input, NOW) }, request),
    ).toEqual(identity);
  });
});

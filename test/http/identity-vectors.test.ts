// The published test vectors (test/vectors/, made by generate.ts from the written rules) hold for the
// gateway's HMAC signer (src/http/identity.ts) and for both verifiers of keygate/verifier: what a
// Python or Go service checks its own implementation against is what keygate itself does.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sign, type Identity as GatewayIdentity } from '../../src/http/identity.js';
import {
  contentDigest,
  createJwtVerifier,
  createMemoryReplayCache,
  hmacSigningString,
  IdentityVerificationError,
  verifyHmacHeaders,
  verifyHmacIdentity,
  verifySignedBody,
  type Identity,
} from '../../src/verifier/index.js';

interface VectorRequest {
  method: string;
  target: string;
  headers: Record<string, string>;
  body: string | null;
}
type Expected = { valid: true; identity: Identity } | { valid: false; reason: string };
interface HmacCase {
  name: string;
  seenBefore?: boolean;
  request: VectorRequest;
  gatewaySigned: {
    timestamp: string;
    requestId: string;
    method: string;
    target: string;
    identity: string;
    contentDigest: string | null;
    signingString: string;
    signature: string;
  };
  expected: Expected;
}
interface JwtCase {
  name: string;
  seenBefore?: boolean;
  header: 'authorization' | 'x-gateway-jwt';
  request: VectorRequest;
  expected: Expected;
}

// The verifier keeps its own copy of the identity type (it imports nothing of keygate): the two must
// stay the same shape, which these assignments make the type check prove.
export const sameShape: [Identity, GatewayIdentity] = [null as unknown as GatewayIdentity, null as unknown as Identity];

const load = (name: string) => JSON.parse(readFileSync(new URL(`../vectors/${name}`, import.meta.url), 'utf8'));
const hmac = load('identity-hmac.json') as { secret: string; now: number; maxAgeMs: number; cases: HmacCase[] };
const jwt = load('identity-jwt.json') as { now: number; audience: string; jwks: { keys: object[] }; cases: JwtCase[] };

/** The verdict of a verification: the identity, or the reason of the refusal. */
async function outcome(verify: () => Promise<Identity>): Promise<Expected> {
  try {
    return { valid: true, identity: await verify() };
  } catch (err) {
    if (err instanceof IdentityVerificationError) return { valid: false, reason: err.reason };
    throw err;
  }
}

describe('HMAC vectors: the gateway signs what they say', () => {
  it.each(hmac.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const g = c.gatewaySigned;
    expect(hmacSigningString({ ...g, contentDigest: g.contentDigest ?? undefined })).toBe(g.signingString);
    expect(
      sign(hmac.secret, g.timestamp, g.requestId, g.method, g.target, g.identity, g.contentDigest ?? undefined),
    ).toBe(g.signature);
    if (c.request.body !== null && g.contentDigest !== null && c.expected.valid)
      expect(contentDigest(c.request.body)).toBe(g.contentDigest);
  });
});

describe('HMAC vectors: verifyHmacIdentity reaches each expected verdict', () => {
  it.each(hmac.cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const replay = createMemoryReplayCache(() => hmac.now);
    const verify = () =>
      verifyHmacIdentity(
        hmac.secret,
        { ...c.request, body: c.request.body ?? undefined },
        { now: () => hmac.now, maxAgeMs: hmac.maxAgeMs, replay },
      );
    if (c.seenBefore) expect((await outcome(verify)).valid).toBe(true);
    expect(await outcome(verify)).toEqual(c.expected);
  });

  it('covers every refusal the rules name', () => {
    const reasons = new Set(hmac.cases.flatMap((c) => (c.expected.valid ? [] : [c.expected.reason])));
    expect([...reasons].sort()).toEqual([
      'bad_signature',
      'digest_mismatch',
      'digest_missing',
      'missing',
      'replayed',
      'stale',
    ]);
    expect(hmac.cases.some((c) => c.expected.valid && c.request.body === null)).toBe(true);
    expect(hmac.cases.some((c) => c.expected.valid && c.request.body !== null)).toBe(true);
  });
});

// keygate's backend checks the headers before routing and the body once read (src/backend/server.ts).
describe('HMAC vectors: verifyHmacHeaders then verifySignedBody reach the same verdicts', () => {
  it.each(hmac.cases.filter((c) => !c.seenBefore).map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const verify = async () => {
      const signed = verifyHmacHeaders(hmac.secret, c.request, { now: () => hmac.now, maxAgeMs: hmac.maxAgeMs });
      return verifySignedBody(signed, c.request.body ?? undefined);
    };
    expect(await outcome(verify)).toEqual(c.expected);
  });
});

describe('JWT vectors: createJwtVerifier reaches each expected verdict', () => {
  it.each(jwt.cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const verifier = createJwtVerifier({
      jwks: jwt.jwks as never,
      audience: jwt.audience,
      header: c.header,
      now: () => jwt.now,
      replay: createMemoryReplayCache(() => jwt.now),
    });
    const verify = () =>
      verifier(c.request.headers, {
        method: c.request.method,
        target: c.request.target,
        body: c.request.body ?? undefined,
      });
    if (c.seenBefore) expect((await outcome(verify)).valid).toBe(true);
    expect(await outcome(verify)).toEqual(
      c.expected.valid ? { valid: true, identity: c.expected.identity } : c.expected,
    );
  });

  it('covers both algorithms and the refusals a service must make', () => {
    const reasons = new Set(jwt.cases.flatMap((c) => (c.expected.valid ? [] : [c.expected.reason])));
    for (const r of [
      'bad_signature',
      'stale',
      'digest_mismatch',
      'digest_missing',
      'wrong_request',
      'wrong_audience',
      'replayed',
    ])
      expect(reasons).toContain(r);
    const algs = jwt.cases
      .filter((c) => c.expected.valid)
      .map(
        (c) =>
          JSON.parse(
            Buffer.from(
              Object.values(c.request.headers)[0]
                .replace(/^Bearer /, '')
                .split('.')[0],
              'base64url',
            ).toString(),
          ).alg,
      );
    expect(new Set(algs)).toEqual(new Set(['EdDSA', 'ES256']));
  });
});

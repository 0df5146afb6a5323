// Microseconds per identity signature, in one process: the HMAC headers of docs/decisions.md section 5 (for
// scale), the identity JWT as src/http/identity-jwt.ts signs it (EdDSA and ES256, keys imported once,
// synchronous node:crypto), and the same token through jose's SignJWT (async, WebCrypto), the
// alternative the signer was measured against. Run: npx tsx bench/identity-jwt.ts [iterations]
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { encodeIdentity, sign as hmacSign, type Identity } from '../src/http/identity.js';
import { createJwtSigner, type JwtSignInput } from '../src/http/identity-jwt.js';
import { parseJwtKeys } from '../src/config/jwt-keys.js';

const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = 5;
const identity: Identity = {
  keyId: 1000,
  keyType: 'workspace',
  organizationId: 1,
  userId: null,
  workspaceId: 100,
  role: 'ADMIN',
  scopes: ['accounts:read', 'accounts:write', 'tags:read', 'tags:write', 'analytics:read', 'warmup:read'],
  plan: 'growth',
};
const input: JwtSignInput = {
  identity,
  method: 'POST',
  target: '/v2/workspaces/100/tags?limit=20',
  requestId: 'b2c1f0a4-6a1e-4d57-9d0f-2f0f6c1e9a11',
  contentDigest: 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
};
const ed = { ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'bench-ed' };
const es = {
  kid: 'bench-es',
  pem: generateKeyPairSync('ec', { namedCurve: 'P-256' })
    .privateKey.export({ format: 'pem', type: 'pkcs8' })
    .toString(),
};
const [edKey] = parseJwtKeys(JSON.stringify([ed]));
const [esKey] = parseJwtKeys(JSON.stringify([es]));
const edSigner = createJwtSigner({ keys: [edKey], audience: 'orders' });
const esSigner = createJwtSigner({ keys: [esKey], audience: 'orders' });
const encoded = encodeIdentity(identity);

function joseToken(alg: 'EdDSA' | 'ES256', key: typeof edKey, now: number): Promise<string> {
  const iat = Math.floor(now / 1000);
  return new SignJWT({
    htm: input.method,
    htu: input.target,
    cd: input.contentDigest,
    rid: input.requestId,
    kg: identity,
  })
    .setProtectedHeader({ alg, kid: key.kid, typ: 'JWT' })
    .setIssuer('keygate')
    .setAudience('orders')
    .setSubject(`key:${identity.keyId}`)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 60)
    .setJti(crypto.randomUUID())
    .sign(key.privateKey);
}

const cases: [string, (now: number) => unknown][] = [
  [
    'hmac headers (docs/decisions.md section 5)',
    (now) =>
      hmacSign(
        'a-gateway-secret-of-32-characters',
        String(now),
        input.requestId,
        input.method,
        input.target,
        encoded,
        input.contentDigest,
      ),
  ],
  ['jwt EdDSA (identity-jwt.ts)', (now) => edSigner.sign(input, now)],
  ['jwt ES256 (identity-jwt.ts)', (now) => esSigner.sign(input, now)],
  ['jwt EdDSA (jose SignJWT)', (now) => joseToken('EdDSA', edKey, now)],
  ['jwt ES256 (jose SignJWT)', (now) => joseToken('ES256', esKey, now)],
];

/**
 * Per call, N calls awaited one after another (as the forwarder would), the median of ROUNDS rounds:
 * wall µs, and CPU µs of the whole process (jose's WebCrypto jobs run on libuv's pool: they count).
 * CPU is the figure to compare on a shared machine; wall time includes waiting for other processes.
 */
async function measure(fn: (now: number) => unknown): Promise<{ wall: number; cpu: number }> {
  const rounds: { wall: number; cpu: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) {
      const v = fn(1_795_435_200_000 + i);
      if (v instanceof Promise) await v;
    }
    const wall = Number(process.hrtime.bigint() - t0) / 1000 / N;
    const c = process.cpuUsage(c0);
    rounds.push({ wall, cpu: (c.user + c.system) / N });
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
  return { wall: median(rounds.map((x) => x.wall)), cpu: median(rounds.map((x) => x.cpu)) };
}

for (const [, fn] of cases) await measure(fn); // warm-up: every path compiled before any is timed
console.log(`node ${process.version}, ${N} signatures x ${ROUNDS} rounds, medians per signature`);
console.log(`${'signature'.padEnd(30)} ${'cpu µs'.padStart(8)} ${'wall µs'.padStart(8)}`);
for (const [name, fn] of cases) {
  const m = await measure(fn);
  console.log(`${name.padEnd(30)} ${m.cpu.toFixed(1).padStart(8)} ${m.wall.toFixed(1).padStart(8)}`);
}

// Run in a scratch project where @keygate/verifier is installed: every case of keygate's test vectors
// (the folder is the first argument) through the package as a service imports it, printing one JSON
// line per case, { file, name, outcome }, for package.test.ts to compare with the expected verdicts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createJwtVerifier,
  createMemoryReplayCache,
  IdentityVerificationError,
  verifyHmacIdentity,
} from '@keygate/verifier';

const load = (name) => JSON.parse(readFileSync(join(process.argv[2], name), 'utf8'));

async function verdict(verify) {
  try {
    return { valid: true, identity: await verify() };
  } catch (err) {
    if (err instanceof IdentityVerificationError) return { valid: false, reason: err.reason };
    throw err;
  }
}

/** A case marked seenBefore is verified once first, as the service that already accepted it. */
async function run(file, c, verify) {
  const first = c.seenBefore ? await verdict(verify) : null;
  const outcome = await verdict(verify);
  console.log(JSON.stringify({ file, name: c.name, firstValid: first?.valid ?? null, outcome }));
}

const hmac = load('identity-hmac.json');
for (const c of hmac.cases) {
  const replay = createMemoryReplayCache(() => hmac.now);
  const request = { ...c.request, body: c.request.body ?? undefined };
  await run('identity-hmac.json', c, () =>
    verifyHmacIdentity(hmac.secret, request, { now: () => hmac.now, maxAgeMs: hmac.maxAgeMs, replay }),
  );
}

const jwt = load('identity-jwt.json');
for (const c of jwt.cases) {
  const verify = createJwtVerifier({
    jwks: jwt.jwks,
    audience: jwt.audience,
    header: c.header,
    now: () => jwt.now,
    replay: createMemoryReplayCache(() => jwt.now),
  });
  const { method, target, body } = c.request;
  await run('identity-jwt.json', c, () => verify(c.request.headers, { method, target, body: body ?? undefined }));
}

// Your fastify service behind keygate: every request's identity verified with @keygate/verifier.
// Documentation, not installed by keygate: `npm install fastify @keygate/verifier` in your service, then
//   GATEWAY_SECRET=... node server.mjs                                   (IDENTITY_FORMAT hmac, the default)
//   KEYGATE_JWKS_URL=http://gateway:9090/.well-known/jwks.json node server.mjs   (IDENTITY_FORMAT jwt|both)
// The signature covers the body's digest, so every body is parsed as a raw Buffer first.
import Fastify from 'fastify';
import {
  createJwtVerifier,
  createMemoryReplayCache,
  IdentityVerificationError,
  verifyHmacIdentity,
} from '@keygate/verifier';

const replay = createMemoryReplayCache(); // one instance; with several, back ReplayCache with Redis SET NX
const jwks = process.env.KEYGATE_JWKS_URL;
const verifyJwt = jwks ? createJwtVerifier({ jwksUrl: jwks, audience: process.env.KEYGATE_AUDIENCE, replay }) : null;

const app = Fastify({ logger: true });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_req, body, done) => done(null, body));
app.decorateRequest('identity', null);

// preHandler runs after the body is read, so the digest can be checked against it.
app.addHook('preHandler', async (req, reply) => {
  // req.raw.url: the target exactly as forwarded, query included.
  const request = { method: req.method, target: req.raw.url, body: req.body ?? undefined };
  try {
    req.identity = verifyJwt
      ? await verifyJwt(req.headers, request)
      : await verifyHmacIdentity(process.env.GATEWAY_SECRET, { ...request, headers: req.headers }, { replay });
  } catch (err) {
    if (!(err instanceof IdentityVerificationError)) throw err; // e.g. the JWKS could not be fetched: 5xx
    req.log.warn({ reason: err.reason }, 'identity refused'); // the reason, never the headers
    return reply.code(401).send({ error: 'unauthenticated' });
  }
});

app.get('/v2/workspaces/:wid/tags', async (req) => ({
  data: [],
  meta: { keyId: req.identity.keyId, workspaceId: req.identity.workspaceId },
}));
app.post('/v2/workspaces/:wid/tags', async (req, reply) => {
  const tag = JSON.parse(req.body.toString('utf8'));
  return reply.code(201).send({ data: { name: tag.name, createdByKey: req.identity.keyId } });
});

await app.listen({ port: Number(process.env.PORT ?? 3000), host: '0.0.0.0' });

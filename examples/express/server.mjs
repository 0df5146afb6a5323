// Your express service behind keygate: every request's identity verified with @keygate/verifier.
// Documentation, not installed by keygate: `npm install express @keygate/verifier` in your service, then
//   GATEWAY_SECRET=... node server.mjs                                   (IDENTITY_FORMAT hmac, the default)
//   KEYGATE_JWKS_URL=http://gateway:9090/.well-known/jwks.json node server.mjs   (IDENTITY_FORMAT jwt|both)
// The signature covers the body's digest, so the raw bytes are kept (express.raw) and parsed after.
import express from 'express';
import {
  createJwtVerifier,
  createMemoryReplayCache,
  IdentityVerificationError,
  verifyHmacIdentity,
} from '@keygate/verifier';

const replay = createMemoryReplayCache(); // one instance; with several, back ReplayCache with Redis SET NX
const jwks = process.env.KEYGATE_JWKS_URL;
const verifyJwt = jwks ? createJwtVerifier({ jwksUrl: jwks, audience: process.env.KEYGATE_AUDIENCE, replay }) : null;

const app = express();
app.use(express.raw({ type: () => true, limit: '1mb' })); // req.body: a Buffer when the request has a body

app.use(async (req, res, next) => {
  // originalUrl: the target exactly as forwarded (req.url is rewritten under mounted routers).
  const request = {
    method: req.method,
    target: req.originalUrl,
    body: Buffer.isBuffer(req.body) ? req.body : undefined,
  };
  try {
    req.identity = verifyJwt
      ? await verifyJwt(req.headers, request)
      : await verifyHmacIdentity(process.env.GATEWAY_SECRET, { ...request, headers: req.headers }, { replay });
    next();
  } catch (err) {
    if (!(err instanceof IdentityVerificationError)) return next(err); // e.g. the JWKS could not be fetched: 5xx
    req.log?.warn?.({ reason: err.reason }, 'identity refused'); // the reason, never the headers
    res.status(401).json({ error: 'unauthenticated' });
  }
});

app.get('/v2/workspaces/:wid/tags', (req, res) => {
  // The gateway already checked the key, scope, role and workspace; the identity says who called.
  res.json({ data: [], meta: { keyId: req.identity.keyId, workspaceId: req.identity.workspaceId } });
});
app.post('/v2/workspaces/:wid/tags', (req, res) => {
  const tag = JSON.parse(req.body.toString('utf8'));
  res.status(201).json({ data: { name: tag.name, createdByKey: req.identity.keyId } });
});

app.listen(Number(process.env.PORT ?? 3000), () => console.log('listening'));

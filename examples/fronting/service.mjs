// A stand-in for "your service": a plain node:http server on PORT (3000) that accepts only requests
// keygate forwarded, verified with keygate/verifier (the HMAC identity, keyed with GATEWAY_SECRET; the
// signature covers the target and the body's digest, and is good once). README, "Fronting your service".
import http from 'node:http';
import { verifyHmacIdentity, createMemoryReplayCache, IdentityVerificationError } from 'keygate/verifier';

const secret = process.env.GATEWAY_SECRET;
if (!secret) throw new Error('GATEWAY_SECRET: the secret the gateway signs with');
const replay = createMemoryReplayCache();
const items = new Map(); // workspace id -> [{ id, name, createdByKey }]

http
  .createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const reply = (status, data) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(data));
    };
    let who;
    try {
      who = await verifyHmacIdentity(
        secret,
        { method: req.method, target: req.url, headers: req.headers, body: body.length ? body : undefined },
        { replay },
      );
    } catch (err) {
      if (err instanceof IdentityVerificationError) return reply(401, { error: 'unauthenticated', reason: err.reason });
      throw err;
    }
    // The gateway already checked the key, its scope, role, workspace and rate limits.
    const m = /^\/v2\/workspaces\/(\d+)\/items$/.exec(req.url.split('?')[0]);
    if (!m) return reply(404, { error: 'not_found' });
    const list = items.get(m[1]) ?? [];
    items.set(m[1], list);
    if (req.method === 'POST') {
      const item = { id: list.length + 1, name: JSON.parse(body.toString() || '{}').name, createdByKey: who.keyId };
      list.push(item);
      return reply(201, { data: item });
    }
    reply(200, { data: list, calledBy: { keyId: who.keyId, workspaceId: who.workspaceId, role: who.role } });
  })
  .listen(Number(process.env.PORT ?? 3000), '127.0.0.1');

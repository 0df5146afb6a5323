// keygate as nginx's authorizer, through the real programs: Debian's nginx running
// deploy/forward-auth/nginx.conf (its addresses replaced, log and temporary paths added for an
// unprivileged run) in front of keygate's reference backend, with two keygate decision instances
// (DECISION_PORT) sharing one PostgreSQL database and one Redis, in the config's one `upstream` block.
// The same list of requests goes to keygate's own proxy (a stack of its own on a copy of the same seed,
// its own Redis prefix) and through nginx: the same statuses, bodies (request ids and timestamps
// aside) and rate-limit fields. Then a budget spent through nginx by requests both instances decide
// is exact.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStores } from '../../src/limits/redis/index.js';
import type { SharedStores } from '../../src/limits/types.js';
import { K } from '../fixtures/seed.js';
import { testRedisClient } from '../helpers/redis.js';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { testSecret } from '../helpers/keys.js';
import { haveNginx, startForwardAuthNginx, type RunningNginx } from '../helpers/nginx.js';

/** A browser origin of CORS_ORIGINS. */
const ORIGIN = 'https://app.example.test';
/** The fields compared: what a client may still spend, when to retry, CORS, and the body's type. */
const COMPARED = /^(x-ratelimit-|ratelimit|retry-after$|access-control-|vary$|content-type$)/;

// Needs nginx (the program under test), PostgreSQL (two keygate instances share one database: PGlite is
// one process's) and Redis (one budget over two instances, each on its own connection, as two processes
// would be). CI installs nginx (.ci/run) and sets both services.
describe.skipIf(!haveNginx() || !process.env.DATABASE_URL || !process.env.REDIS_URL)(
  'nginx auth_request with deploy/forward-auth/nginx.conf and two keygate decision instances',
  () => {
    const clock = new FakeClock();
    const stores: SharedStores[] = [];
    let proxy: Stack;
    let a: Stack;
    let b: Stack;
    let nginx: RunningNginx | undefined;
    let nginxUrl = '';
    const extra = {
      apiKeys: [
        // Of organization 2 (free: 5 reads a minute), for the bucket spent out.
        {
          id: 2100,
          secret: testSecret('svc_ws_', 'FreeReader'),
          name: 'free reader',
          workspaceId: 200,
          role: 'ADMIN',
          scopes: ['tags:read'],
          createdBy: 20,
        },
      ],
    };

    beforeAll(async () => {
      // keygate's own proxy: the reference every answer through nginx is compared with.
      const cors = { CORS_ORIGINS: ORIGIN };
      proxy = await startStack({ clock, extra, env: cors });
      const prefix = `t${randomBytes(5).toString('hex')}:`;
      const shared = () => {
        const st = createRedisStores({ redis: testRedisClient(), prefix, clock });
        stores.push(st);
        return st;
      };
      const decision = { ...cors, DECISION_PORT: '0', DECISION_HOST: '127.0.0.1' };
      // Decision instance A with the reference backend nginx forwards to; B decides only.
      // The backend takes a body under a decision's signature, made without it (nginx sends the body on).
      a = await startStack({ clock, extra, stores: shared(), env: { ...decision, BACKEND_UNSIGNED_BODY: 'accept' } });
      b = await startStack({
        clock,
        db: a.db,
        stores: shared(),
        mode: 'gateway',
        upstreamUrl: a.backendUrl,
        env: decision,
      });
      const portOf = (url: string | null) => Number(new URL(url ?? 'http://x:0').port);
      nginx = await startForwardAuthNginx({
        decision: [portOf(a.app.decisionUrl), portOf(b.app.decisionUrl)],
        app: portOf(a.backendUrl),
      });
      nginxUrl = nginx.url;
    }, 120_000);

    afterAll(async () => {
      await nginx?.stop();
      await b?.close();
      await a?.close();
      await proxy?.close();
      for (const st of stores) await st.close();
    });

    interface Call {
      method: string;
      path: string;
      /** Bearer key (/v2). */
      key?: string;
      /** X-Api-Key (/v1). */
      apiKey?: string;
      body?: string;
      ip: string;
      headers?: Record<string, string>;
    }

    interface Seen {
      status: number;
      fields: Record<string, string | null>;
      body: unknown;
    }

    /**
     * One request on a connection of its own (node:http, no agent): a refusal answered before its body
     * was read leaves no unread bytes in front of the next request.
     */
    async function send(base: string, c: Call): Promise<Seen> {
      const headers: Record<string, string> = { 'x-forwarded-for': c.ip, ...c.headers };
      if (c.key) headers.authorization = `Bearer ${c.key}`;
      if (c.apiKey) headers['x-api-key'] = c.apiKey;
      if (c.body !== undefined) headers['content-type'] = 'application/json';
      const r = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>(
        (resolve, reject) => {
          const req = http.request(base + c.path, { method: c.method, headers, agent: false }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
            res.on('error', reject);
          });
          req.on('error', reject);
          req.end(c.body);
        },
      );
      const fields: Record<string, string | null> = Object.fromEntries(
        Object.entries(r.headers)
          .filter(([n]) => COMPARED.test(n))
          .sort(([x], [y]) => x.localeCompare(y))
          .map(([n, v]) => [n, String(v)]),
      );
      // A request id of keygate's on every answer: whether there is one is compared, not its value.
      const id = (r.headers['x-request-id'] as string | undefined) ?? null;
      fields['x-request-id'] = id !== null && /^[0-9a-f-]{36}$/.test(id) ? '<uuid>' : id;
      let body: unknown = r.text;
      try {
        body = ignoringVolatile(JSON.parse(r.text));
      } catch {
        /* compared as text */
      }
      return { status: r.status, fields, body };
    }

    /** Request ids and timestamps differ between two runs of one request; everything else may not. */
    function ignoringVolatile(v: unknown): unknown {
      if (Array.isArray(v)) return v.map(ignoringVolatile);
      if (v === null || typeof v !== 'object') return v;
      return Object.fromEntries(
        Object.entries(v).map(([k, x]) => [
          k,
          /^(request_?id|timestamp|created_?at|updated_?at|last_?used_?at)$/i.test(k)
            ? '<varies>'
            : ignoringVolatile(x),
        ]),
      );
    }

    it('answers a list of workspace-API requests as keygate own proxy does: statuses, bodies, rate-limit fields', async () => {
      clock.advance(60_000);
      const free = testSecret('svc_ws_', 'FreeReader');
      const calls: (Call & { expect: number })[] = [
        { method: 'GET', path: '/v2/workspaces/100/tags', key: K.wsAdmin, ip: '10.9.0.1', expect: 200 },
        {
          method: 'POST',
          path: '/v2/workspaces/100/tags',
          key: K.wsAdmin,
          body: JSON.stringify({ name: 'through nginx' }),
          ip: '10.9.0.1',
          expect: 201,
        },
        { method: 'GET', path: '/v2/workspaces/100/tags', key: K.wsAdmin, ip: '10.9.0.1', expect: 200 },
        { method: 'GET', path: '/v2/workspaces/100/tags?limit=1', key: K.editorPk, ip: '10.9.0.2', expect: 200 },
        {
          method: 'POST',
          path: '/v2/workspaces/100/tags',
          key: K.wsAdmin,
          body: JSON.stringify({ name: '' }),
          ip: '10.9.0.1',
          expect: 400,
        },
        { method: 'GET', path: '/v2/workspaces/100/tags', ip: '10.9.0.3', expect: 401 },
        {
          method: 'GET',
          path: '/v2/workspaces/100/tags',
          key: testSecret('svc_ws_', 'NoSuchKey'),
          ip: '10.9.0.4',
          expect: 401,
        },
        { method: 'GET', path: '/v2/workspaces/101/tags', key: K.wsAdmin, ip: '10.9.0.1', expect: 403 },
        { method: 'GET', path: '/v2/workspaces/100/tags', key: K.wsNoScope, ip: '10.9.0.5', expect: 403 },
        { method: 'GET', path: '/v2/workspaces/100/rate-limit', key: K.wsAdmin, ip: '10.9.0.1', expect: 200 },
        { method: 'GET', path: '/v2/openapi.json', ip: '10.9.0.8', expect: 200 },
        // A browser's: the CORS fields on an allowed answer, and a preflight keygate answers itself.
        {
          method: 'GET',
          path: '/v2/workspaces/100/tags',
          key: K.wsAdmin,
          ip: '10.9.0.1',
          headers: { origin: ORIGIN },
          expect: 200,
        },
        {
          method: 'OPTIONS',
          path: '/v2/workspaces/100/tags',
          ip: '10.9.0.9',
          headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
          expect: 204,
        },
        // Above BODY_LIMIT_BYTES (1 MiB): keygate refuses it from the size nginx describes.
        {
          method: 'POST',
          path: '/v2/workspaces/100/tags',
          key: K.wsAdmin,
          body: JSON.stringify({ name: 'x'.repeat(1_100_000) }),
          ip: '10.9.0.1',
          expect: 413,
        },
        { method: 'GET', path: '/v2/workspaces/100/nothing-here', key: K.wsAdmin, ip: '10.9.0.1', expect: 404 },
        { method: 'GET', path: '/v1/email-accounts', apiKey: K.partner, ip: '10.9.0.6', expect: 200 },
        { method: 'GET', path: '/v1/rate-limit', apiKey: K.partner, ip: '10.9.0.6', expect: 200 },
        {
          method: 'GET',
          path: '/v1/email-accounts',
          apiKey: testSecret('svc_v1_', 'Nobody'),
          ip: '10.9.0.7',
          expect: 401,
        },
        // The free plan's 5 reads a minute: the sixth is refused 429 with Retry-After.
        ...Array.from({ length: 6 }, (_, i) => ({
          method: 'GET',
          path: '/v2/workspaces/200/tags',
          key: free,
          ip: `10.9.1.${i}`,
          expect: i < 5 ? 200 : 429,
        })),
      ];
      for (const c of calls) {
        const viaProxy = await send(proxy.gatewayUrl, c);
        const viaNginx = await send(nginxUrl, c);
        const what = `${c.method} ${c.path} (${c.expect})`;
        expect(viaProxy.status, what).toBe(c.expect);
        expect(viaNginx, what).toEqual(viaProxy);
      }
    });

    it('spends one budget exactly over both decision instances: of 30 requests for 20, 20 pass', async () => {
      clock.advance(60_000);
      const statuses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          fetch(`${nginxUrl}/v2/workspaces/100/tags`, {
            headers: { authorization: `Bearer ${K.viewerPk}`, 'x-forwarded-for': `10.9.2.${i}` },
          }).then(async (r) => ({ status: r.status, body: await r.text() })),
        ),
      );
      expect(statuses.filter((s) => s.status === 200).length).toBe(20);
      const refused = statuses.filter((s) => s.status !== 200);
      expect(refused.map((s) => s.status)).toEqual(Array(10).fill(429));
      for (const s of refused) expect(JSON.parse(s.body).errorCode).toBe('150005');
      // Both instances decided some of them (nginx's log names the one that decided each request).
      const deciders = new Set(
        readFileSync(join(nginx!.dir, 'access.log'), 'utf8')
          .split('\n')
          .map((l) => / decided_by=(\S+)/.exec(l)?.[1])
          .filter((x): x is string => x !== undefined && x !== '-'),
      );
      expect(deciders.size).toBe(2);
    });
  },
);

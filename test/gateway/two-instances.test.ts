// Two gateway instances sharing one Redis and one database: one budget, and access changes that
// apply to the very next request on the other instance. Each instance has its own principal cache
// and its own Redis connection, as two processes would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K, ALL_SCOPES } from '../fixtures/seed.js';
import { createRedisStores } from '../../src/limits/redis/index.js';
import { haveRedis, testRedisClient } from '../helpers/redis.js';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import type { SharedStores } from '../../src/limits/types.js';
import { testSecret } from '../helpers/keys.js';

const clock = new FakeClock();
let a: Stack;
let b: Stack;
const extraStores: SharedStores[] = [];

function sharedStores(prefix: string): () => SharedStores {
  if (!haveRedis()) {
    const one = createMemoryStores({ clock });
    return () => one;
  }
  return () => {
    const st = createRedisStores({ redis: testRedisClient(), prefix, clock });
    extraStores.push(st);
    return st;
  };
}

const victimPk = testSecret('svc_pk_', 'Victim');
const revokable = testSecret('svc_ws_', 'Revokable');

beforeAll(async () => {
  const stores = sharedStores(`t${randomBytes(4).toString('hex')}:`);
  a = await startStack({
    clock,
    stores: stores(),
    seed: undefined,
    extra: {
      users: [{ id: 13, organizationId: 1, email: 'victim@acme.test', orgRole: 'MEMBER' }],
      memberships: [{ workspaceId: 100, userId: 13, role: 'ADMIN' }],
      apiKeys: [
        { id: 1013, secret: victimPk, name: 'victim pk', userId: 13, scopes: ALL_SCOPES },
        {
          id: 1014,
          secret: revokable,
          name: 'revokable',
          workspaceId: 100,
          role: 'ADMIN',
          scopes: ALL_SCOPES,
          createdBy: 10,
        },
      ],
    },
  });
  // The second instance: gateway only, same database, same Redis (own connection), forwarding to a's backend.
  b = await startStack({ clock, db: a.db, stores: stores(), mode: 'gateway', upstreamUrl: a.backendUrl });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
  for (const st of extraStores) await st.close();
});

describe('two gateway instances', () => {
  it('enforce one budget: 20 GETs spread over both pass, the 21st fails on either', async () => {
    clock.advance(60_000);
    for (let i = 0; i < 20; i++) {
      const r = await (i % 2 ? a : b).request('GET', '/v2/workspaces/100/rate-limit', {
        key: K.editorPk,
        ip: '10.3.0.1',
      });
      expect(r.status).toBe(200);
      const x = await (i % 2 ? b : a).request('GET', '/v2/workspaces/100/tags', { key: K.editorPk, ip: `10.3.1.${i}` });
      expect(x.headers.get('x-ratelimit-remaining')).toBe(String(19 - i));
    }
    for (const inst of [a, b]) {
      const r = await inst.request('GET', '/v2/workspaces/100/tags', { key: K.editorPk, ip: '10.3.0.2' });
      expect(r.status).toBe(429);
      expect(r.body.errorCode).toBe('150005');
    }
  });

  it("a key revoked through a's backend is refused by b on the very next request", async () => {
    clock.advance(60_000);
    expect((await b.request('GET', '/v2/workspaces/100/rate-limit', { key: revokable, ip: '10.3.2.1' })).status).toBe(
      200,
    );
    const del = await a.session('DELETE', '/api-keys/1014', K.session);
    expect(del.status).toBe(200);
    expect(del.body.success).toBe(true);
    const r = await b.request('GET', '/v2/workspaces/100/rate-limit', { key: revokable, ip: '10.3.2.1' });
    expect(r.status).toBe(401);
    expect(r.body.errorCode).toBe('150002');
  });

  it('pausing the organization applies on b at once, and resuming too', async () => {
    expect((await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.3.2.2' })).status).toBe(
      200,
    );
    await a.internal('PATCH', '/internal/organizations/1', { paused: true });
    expect(
      (await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.3.2.2' })).body.errorCode,
    ).toBe('040006');
    await a.internal('PATCH', '/internal/organizations/1', { paused: false });
    expect((await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.3.2.2' })).status).toBe(
      200,
    );
  });

  it('a plan without API access applies on b at once', async () => {
    await a.internal('PATCH', '/internal/organizations/1', { apiAccess: false });
    expect(
      (await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.3.2.3' })).body.errorCode,
    ).toBe('150007');
    await a.internal('PATCH', '/internal/organizations/1', { apiAccess: true });
    expect((await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.3.2.3' })).status).toBe(
      200,
    );
  });

  it('a plan change applies its budgets on b at once', async () => {
    clock.advance(60_000);
    const before = await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.3.2.4' });
    expect(before.headers.get('x-ratelimit-limit')).toBe('20');
    await a.internal('PATCH', '/internal/organizations/1', { plan: 'scale' });
    try {
      const after = await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.3.2.4' });
      expect(after.headers.get('x-ratelimit-limit')).toBe('30');
      expect(after.body.data.plan).toBe('scale');
    } finally {
      await a.internal('PATCH', '/internal/organizations/1', { plan: 'growth' });
    }
  });

  it('a removed membership is refused by b on the very next request', async () => {
    expect((await b.request('GET', '/v2/workspaces/100/rate-limit', { key: victimPk, ip: '10.3.2.5' })).status).toBe(
      200,
    );
    const del = await a.request('DELETE', '/v2/workspaces/100/members/13', { key: K.wsAdmin, ip: '10.3.2.6' });
    expect(del.status).toBeLessThan(300);
    const r = await b.request('GET', '/v2/workspaces/100/rate-limit', { key: victimPk, ip: '10.3.2.5' });
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150004');
  });

  it('a soft-deleted workspace is refused by b on the very next request', async () => {
    expect((await b.request('GET', '/v2/workspaces/101/rate-limit', { key: K.wsOther, ip: '10.3.2.7' })).status).toBe(
      200,
    );
    expect((await a.internal('DELETE', '/internal/workspaces/101')).status).toBe(200);
    const ws = await b.request('GET', '/v2/workspaces/101/rate-limit', { key: K.wsOther, ip: '10.3.2.7' });
    expect(ws.body.errorCode).toBe('150004');
    const pk = await b.request('GET', '/v2/workspaces/101/rate-limit', { key: K.ownerPk, ip: '10.3.2.7' });
    expect(pk.body.errorCode).toBe('150004');
    // The dead workspace's key is refused on routes without a workspace segment too.
    const list = await b.request('GET', '/v2/workspaces', { key: K.wsOther, ip: '10.3.2.7' });
    expect(list.body.errorCode).toBe('150004');
  });

  it('a change made outside the backend (plain SQL) reaches b through NOTIFY', async () => {
    expect((await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.viewerPk, ip: '10.3.2.8' })).status).toBe(
      200,
    );
    await a.db.query(`UPDATE api_keys SET revoked_at = now() WHERE id = 1012`);
    // NOTIFY is asynchronous: wait for the eviction event rather than a fixed time.
    for (
      let i = 0;
      i < 100 &&
      (await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.viewerPk, ip: '10.3.2.8' })).status === 200;
      i++
    ) {
      await new Promise((r) => setImmediate(r));
    }
    const r = await b.request('GET', '/v2/workspaces/100/rate-limit', { key: K.viewerPk, ip: '10.3.2.8' });
    expect(r.body.errorCode).toBe('150002');
  });
});

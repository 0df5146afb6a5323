// Webhooks through the in-process keygate (docs/events.md): an endpoint made in the admin API, a real
// receiver (node:http) that verifies every request with the `standardwebhooks` package from npm. The
// receiver fails (500), then hangs, then comes back, and the gateway restarts in between: every event is
// delivered and verified, the attempts are visible, nothing is lost. A delivery claimed by a process that
// died is sent once its lease ends; one whose day runs out is failed and visible; one is replayed by hand.
// Two instances on one database tell each quota threshold once per month. Times are the injected clock's.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FakeClock, startStack, testStores, type Stack } from '../helpers/stack.js';
import { adminCall, adminToken } from '../helpers/admin-api.js';
import { startReceiver } from './receiver.js';
import { openTestDb } from '../helpers/db.js';
import { seedWith, K } from '../fixtures/seed.js';
import { claimDue } from '../../src/access/events/queries.js';
import { leaseMs } from '../../src/access/events/delivery.js';
import type { Db } from '../../src/db/types.js';
import type { SharedStores } from '../../src/limits/types.js';

// Long enough for a loaded machine to answer a 500 within it; the hanging receiver holds each attempt this long.
const TIMEOUT_MS = 3_000;
const ENV = {
  ADMIN_API_PORT: '0',
  WEBHOOKS_POLL_MS: '20',
  WEBHOOKS_TIMEOUT_MS: String(TIMEOUT_MS),
  EVENTS_SCAN_MS: '3600000',
};
const until = <T>(fn: () => T | Promise<T>) => vi.waitFor(fn, { timeout: 15_000, interval: 20 });

describe.sequential('a receiver that fails, hangs and comes back, across a restart', () => {
  const clock = new FakeClock();
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(s) });
  let db: Db & { drop(): Promise<void> };
  let stores: SharedStores;
  let stack: Stack;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let token = '';
  let endpointId = 0;
  const secrets: string[] = [];
  const api = (method: string, path: string, body?: unknown) =>
    adminCall(stack.app.adminApiUrl!, method, path, { token, body });
  const deliveries = async (q = '') => {
    const r = await api('GET', `/api/webhooks/${endpointId}/deliveries${q}`);
    expect(r.status, r.text).toBe(200);
    return r.body.items as Record<string, any>[];
  };

  beforeAll(async () => {
    db = await openTestDb();
    stores = testStores(clock, true);
    receiver = await startReceiver();
    stack = await startStack({ clock, db, stores, seed: seedWith(), env: ENV, log });
    token = (await adminToken(stack, 'write', 'hooks', clock)).token;
  });
  afterAll(async () => {
    receiver?.server?.closeAllConnections();
    receiver?.server?.close();
    await stack?.close();
    await stores?.close();
    await db?.drop();
  });

  it('an endpoint is made with its secret shown once', async () => {
    const made = await api('POST', '/api/webhooks', { url: receiver.url, description: 'billing' });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toMatchObject({ url: receiver.url, eventTypes: [], enabled: true, description: 'billing' });
    expect(made.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    endpointId = made.body.id;
    receiver.secret = made.body.secret;
    secrets.push(made.body.secret);
    const read = [await api('GET', `/api/webhooks/${endpointId}`), await api('GET', '/api/webhooks')];
    for (const r of read) {
      expect(r.status).toBe(200);
      expect(r.text).not.toContain(receiver.secret.slice(6));
    }
    expect(read[0].body.secretHint).toBe(receiver.secret.slice(0, 10) + '…');
    const bad = await api('POST', '/api/webhooks', { url: 'ftp://example.com/x' });
    expect(bad.status).toBe(400);
    const badType = await api('POST', '/api/webhooks', { url: receiver.url, eventTypes: ['key.eaten'] });
    expect(badType.status).toBe(400);
  });

  it('500, then no answer, then a restart and 204: every event delivered, verified, its attempts visible', async () => {
    receiver.mode = 'fail';
    const key = await api('POST', '/api/keys', { type: 'workspace', name: 'hooked', workspaceId: 100 });
    expect(key.status, key.text).toBe(201);
    expect((await api('POST', `/api/keys/${key.body.id}/rotate`, { graceSeconds: 0 })).status).toBe(200);
    expect((await api('POST', `/api/keys/${key.body.id}/revoke`)).status).toBe(200);
    const types = ['key.created', 'key.rotated', 'key.revoked'];

    await until(async () => {
      const ds = await deliveries();
      expect(ds.map((d) => [d.eventType, d.status, d.attempts, d.lastStatus])).toEqual(
        types.map((t) => [t, 'pending', 1, 500]).reverse(),
      );
    });
    const first = await deliveries();
    expect(first[0].lastError).toBe('HTTP 500');
    expect(first[0].nextAttemptAt).toBe(new Date(clock.now() + 5_000).toISOString());
    // Deliveries are independent: their order at the receiver is not promised (docs/events.md).
    expect(receiver.got.map((g) => [g.type, g.verified]).sort()).toEqual(types.map((t) => [t, true]).sort());

    // The receiver hangs: each attempt holds a slot until the timeout, then waits 30 s.
    receiver.mode = 'hang';
    clock.advance(5_000);
    await until(async () => {
      const ds = await deliveries();
      for (const d of ds) expect(d).toMatchObject({ status: 'pending', attempts: 2, lastStatus: null });
      expect(ds[0].lastError).toBe(`no answer within ${TIMEOUT_MS} ms`);
      expect(ds[0].nextAttemptAt).toBe(new Date(clock.now() + 30_000).toISOString());
    });
    expect(receiver.got).toHaveLength(6);

    // The gateway stops and another starts on the same database: the outbox holds what is owed.
    await stack.close();
    stack = await startStack({ clock, db, stores, env: ENV, log });
    receiver.mode = 'ok';
    clock.advance(30_000);
    await until(async () => {
      const ds = await deliveries();
      for (const d of ds)
        expect(d).toMatchObject({ status: 'delivered', attempts: 3, lastStatus: 204, lastError: null });
    });
    const ok = receiver.got.filter((g) => g.mode === 'ok');
    expect(ok.map((g) => [g.type, g.verified]).sort()).toEqual(types.map((t) => [t, true]).sort());
    // One webhook-id per event, the same at every attempt.
    expect(new Set(receiver.got.map((g) => g.id)).size).toBe(3);
    expect(ok.find((g) => g.type === 'key.created')!.body).toMatchObject({
      type: 'key.created',
      data: { key: { id: key.body.id, name: 'hooked', hint: key.body.hint } },
    });
  });

  it('a delivery claimed by a process that died is sent once its lease has passed', async () => {
    const before = receiver.got.length;
    // Stopped, so that the claim below is the dead process's and not this one's.
    await stack.close();
    expect((await api2('PATCH', '/api/keys/1000/limits', { read: 9 })).status).toBe(200);
    const [claimed] = await claimDue(db, new Date(clock.now()), new Date(clock.now() + leaseMs(TIMEOUT_MS)), 10);
    expect(claimed).toMatchObject({ attempts: 1 });
    stack = await startStack({ clock, db, stores, env: ENV, log });
    clock.advance(leaseMs(TIMEOUT_MS));
    await until(async () => {
      const [d] = await deliveries();
      expect(d).toMatchObject({ eventType: 'limits.changed', status: 'delivered', attempts: 2 });
    });
    expect(receiver.got.slice(before).map((g) => [g.type, g.verified])).toEqual([['limits.changed', true]]);
  });

  it('a delivery is replayed by hand, with the same webhook-id', async () => {
    const [delivered] = await deliveries('?status=delivered');
    const replay = await api('POST', `/api/webhooks/${endpointId}/deliveries/${delivered.id}/replay`);
    expect(replay.status, replay.text).toBe(201);
    // Due at once: the loop may have sent it before this answer was read.
    expect(replay.body).toMatchObject({
      replayOf: delivered.id,
      messageId: delivered.messageId,
    });
    await until(async () => {
      const [d] = await deliveries();
      expect(d).toMatchObject({ id: replay.body.id, status: 'delivered', attempts: 1 });
    });
    const again = receiver.got.filter((g) => g.id === delivered.messageId);
    expect(again.length).toBeGreaterThanOrEqual(2);
    expect(again.at(-1)!.verified).toBe(true);

    receiver.mode = 'fail';
    expect((await api('PATCH', '/api/keys/1000/limits', { read: 8 })).status).toBe(200);
    const pending = await until(async () => {
      const [d] = await deliveries();
      expect(d).toMatchObject({ status: 'pending', attempts: 1 });
      return d;
    });
    // One still being retried may be sent again too: a second delivery of the same message.
    const twice = await api('POST', `/api/webhooks/${endpointId}/deliveries/${pending.id}/replay`);
    expect(twice.status).toBe(201);
    expect(twice.body).toMatchObject({ replayOf: pending.id, messageId: pending.messageId });
    await until(async () =>
      expect((await deliveries())[0]).toMatchObject({ id: twice.body.id, attempts: 1, lastStatus: 500 }),
    );
    expect((await api('POST', `/api/webhooks/${endpointId}/deliveries/999999/replay`)).status).toBe(404);
  });

  it('a receiver that never comes back: retried for a day on the growing schedule, then failed and visible', async () => {
    const [d0] = await deliveries();
    const created = Date.parse(d0.createdAt);
    const waits: number[] = [];
    for (let attempt = 1; ; attempt++) {
      const d = await until(async () => {
        const [d] = await deliveries();
        // The attempt finished (a claim counts it before its outcome is known).
        expect([d.attempts, d.lastAttemptAt]).toEqual([attempt, new Date(clock.now()).toISOString()]);
        expect(d.lastStatus).toBe(500);
        return d;
      });
      if (d.status === 'failed') break;
      const next = Date.parse(d.nextAttemptAt);
      waits.push(next - clock.now());
      clock.t = next;
    }
    expect(waits.slice(0, 6)).toEqual([5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000]);
    expect(waits.slice(6, -1).every((w) => w === 3 * 3_600_000)).toBe(true);
    expect(clock.now()).toBe(created + 86_400_000);
    const failed = await deliveries('?status=failed');
    expect(failed[0]).toMatchObject({ id: d0.id, status: 'failed', nextAttemptAt: null, lastError: 'HTTP 500' });
    expect((await api('GET', `/api/webhooks/${endpointId}`)).body.deliveries.failed).toBeGreaterThanOrEqual(1);
    // Replayed by hand once the receiver is back, it is delivered.
    receiver.mode = 'ok';
    const replay = await api('POST', `/api/webhooks/${endpointId}/deliveries/${d0.id}/replay`);
    expect(replay.status).toBe(201);
    await until(async () => expect((await deliveries())[0]).toMatchObject({ id: replay.body.id, status: 'delivered' }));
  });

  it('a rotated secret signs from then on; an update and a disable apply; no secret in any log line', async () => {
    const rotated = await api('POST', `/api/webhooks/${endpointId}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(receiver.secret);
    secrets.push(rotated.body.secret);
    receiver.secret = rotated.body.secret;
    const before = receiver.got.length;
    expect((await api('POST', '/api/keys/1000/revoke')).status).toBe(200);
    await until(() => expect(receiver.got.length).toBe(before + 1));
    expect(receiver.got.at(-1)).toMatchObject({ type: 'key.revoked', verified: true });

    const only = await api('PATCH', `/api/webhooks/${endpointId}`, { eventTypes: ['quota.threshold'], enabled: false });
    expect(only.status, only.text).toBe(200);
    expect(only.body).toMatchObject({ eventTypes: ['quota.threshold'], enabled: false });
    expect((await api('PATCH', `/api/webhooks/${endpointId}`, {})).status).toBe(400);
    const audit = await api('GET', '/api/audit?action=webhook.');
    expect(audit.body.items.map((a: { action: string }) => a.action)).toContain('webhook.rotate-secret');

    const logged = lines.join('\n');
    expect(logged).toContain('webhook delivery failed');
    for (const s of secrets) {
      expect(logged).not.toContain(s.slice(6));
      expect(audit.text).not.toContain(s.slice(6));
    }
  });

  /** The admin API of a stack that is closed: the service layer is the same through the next one. */
  async function api2(method: string, path: string, body?: unknown) {
    const other = await startStack({ clock, db, stores, env: { ...ENV, WEBHOOKS_DELIVERY: 'off' }, log });
    try {
      return await adminCall(other.app.adminApiUrl!, method, path, { token, body });
    } finally {
      await other.close();
    }
  }
});

describe.sequential('quota thresholds with two instances', () => {
  const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 10));
  let db: Db & { drop(): Promise<void> };
  let stores: SharedStores;
  let a: Stack;
  let b: Stack;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    db = await openTestDb();
    stores = testStores(clock);
    receiver = await startReceiver();
    a = await startStack({ clock, db, stores, seed: seedWith(), env: ENV });
    b = await startStack({ clock, db, stores, env: ENV });
  });
  afterAll(async () => {
    receiver?.server?.close();
    await a?.close();
    await b?.close();
    await stores?.close();
    await db?.drop();
  });

  it('each threshold of the month is sent once, whichever instance saw it cross', async () => {
    const token = (await adminToken(a, 'write', 'quota', clock)).token;
    const api = (method: string, path: string, body?: unknown) =>
      adminCall(a.app.adminApiUrl!, method, path, { token, body });
    const made = await api('POST', '/api/webhooks', { url: receiver.url, eventTypes: ['quota.threshold'] });
    receiver.secret = made.body.secret;
    expect((await api('PATCH', '/api/organizations/1/limits', { monthlyQuota: 10 })).status).toBe(200);

    const spend = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const via = i % 2 ? a : b;
        await via.request('GET', '/v2/workspaces/100/accounts', { key: K.wsAdmin, ip: '203.0.113.71' });
      }
    };
    await spend(14);
    await until(() => expect(receiver.got.map((g) => g.body.data.threshold).sort()).toEqual([100, 80]));
    // December: the month counter starts again, and so do the thresholds.
    clock.t = Date.UTC(2026, 11, 1, 0, 0, 5);
    await spend(9);
    await until(() => expect(receiver.got).toHaveLength(3));
    const told = receiver.got.map((g) => [g.body.data.month, g.body.data.threshold, g.verified]);
    expect(told.sort()).toEqual([
      ['2026-11', 100, true],
      ['2026-11', 80, true],
      ['2026-12', 80, true],
    ]);
    expect(receiver.got[0].body.data).toMatchObject({ organization: { id: 1 }, quota: 10 });
    const rows = await db.query(`SELECT mark FROM events WHERE type = 'quota.threshold' ORDER BY mark`);
    expect(rows.map((r) => r.mark)).toEqual([
      'quota.threshold:1:2026-11:100',
      'quota.threshold:1:2026-11:80',
      'quota.threshold:1:2026-12:80',
    ]);
  });
});

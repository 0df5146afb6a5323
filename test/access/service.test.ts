// The service layer of access changes (src/access/service/): each operation validates, writes with
// exactly one audit row naming its actor, never stores a secret, and bumps the access version after
// the commit; the audit table itself refuses UPDATE, DELETE and TRUNCATE, and only the retention
// purge deletes (the oldest rows, past the retention the owner recorded, the chain still verifying).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ageAuditTrail, openTestDb } from '../helpers/db.js';
import { FakeClock } from '../helpers/stack.js';
import { baseSeed, ALL_SCOPES } from '../fixtures/seed.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { getPepper } from '../../src/access/pepper.js';
import { loadPlans } from '../../src/config/plans.js';
import { serviceContext, ServiceError, type Actor, type ServiceContext } from '../../src/access/service/context.js';
import { createKey, listKeys, revokeKey, rotateKey, updateKey } from '../../src/access/service/keys.js';
import { pauseOrganization, resumeOrganization } from '../../src/access/service/organizations.js';
import { createSession } from '../../src/access/service/sessions.js';
import { listAudit, purgeAudit, verifyAudit } from '../../src/access/service/audit.js';
import type { Db } from '../../src/db/types.js';

let db: Db & { drop(): Promise<void> };
const clock = new FakeClock(Date.now());
const bumps: number[] = [];
let base: Omit<ServiceContext, 'actor' | 'requestId'>;
const as = (actor: Actor, requestId?: string) => serviceContext(base, actor, requestId);
const cli: Actor = { kind: 'cli', osUser: 'alice' };

beforeAll(async () => {
  db = await openTestDb();
  await applySeed(db, parseSeed(baseSeed()));
  const plans = loadPlans('config/plans.json');
  base = {
    db,
    clock,
    pepper: await getPepper(db),
    plans: () => plans,
    scopes: () => Object.fromEntries(ALL_SCOPES.map((s) => [s, 'VIEWER' as const])),
    accessChanged: async (org) => void bumps.push(org),
  };
});
afterAll(async () => db?.drop());

async function auditOf(id: number) {
  return db.query(`SELECT * FROM audit_events WHERE $1 = ANY(target_ids) AND target_type = 'key' ORDER BY id`, [
    String(id),
  ]);
}

describe('keys through the service layer', () => {
  it('create: one audit row with the actor and the request id, no secret anywhere, one bump after the commit', async () => {
    bumps.length = 0;
    const { key, secret } = await createKey(as(cli, 'req-1'), {
      type: 'workspace',
      workspaceId: 100,
      name: 'svc',
      scopes: ['tags:read'],
      metadata: { tier: 'gold' },
    });
    expect(secret).toMatch(/^svc_ws_[A-Za-z0-9]{40}$/);
    expect(key).toMatchObject({
      organizationId: 1,
      role: 'ADMIN',
      status: 'active',
      expiresAt: null,
      metadata: { tier: 'gold' },
      lastUsedAt: null,
      previousSecret: null,
    });
    expect(bumps).toEqual([1]);
    const rows = await auditOf(key.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor_kind: 'cli',
      actor_id: 'alice',
      action: 'key.create',
      organization_id: 1,
      request_id: 'req-1',
      before: null,
    });
    expect(rows[0].after).toMatchObject({ id: key.id, name: 'svc', metadata: { tier: 'gold' } });
    const all = JSON.stringify(await db.query(`SELECT * FROM audit_events`));
    expect(all).not.toContain(secret.slice(7));
    expect(all).not.toMatch(/key_hash|keyHash/);
  });

  it('a refused change writes nothing, audits nothing and bumps nothing', async () => {
    bumps.length = 0;
    const [{ n: before }] = await db.query(`SELECT count(*)::int AS n FROM audit_events`);
    await expect(
      createKey(as(cli), { type: 'workspace', workspaceId: 100, name: 'x', scopes: ['no:such'] }),
    ).rejects.toMatchObject({ kind: 'invalid', reason: 'unknown_scope' });
    await expect(
      createKey(as(cli), { type: 'personal', userId: 10, name: 'x', metadata: { blob: 'x'.repeat(1100) } }),
    ).rejects.toMatchObject({ kind: 'invalid', field: 'metadata' });
    await expect(revokeKey(as(cli), 987654)).rejects.toMatchObject({ kind: 'not_found' });
    // A session user of another organization: the key looks absent.
    await expect(revokeKey(as({ kind: 'user', id: 20 }), 1000)).rejects.toBeInstanceOf(ServiceError);
    const [{ n: after }] = await db.query(`SELECT count(*)::int AS n FROM audit_events`);
    expect(after).toBe(before);
    expect(bumps).toEqual([]);
  });

  it('update, rotate and revoke: one row each, with before and after', async () => {
    const { key } = await createKey(as({ kind: 'user', id: 10 }), {
      type: 'personal',
      name: 'mine',
      scopes: ['workspace:read'],
    });
    const at = new Date(clock.now() + 3_600_000);
    const updated = await updateKey(as({ kind: 'admin-token', id: 'tok_1', name: 'ops' }), key.id, { expiresAt: at });
    expect(updated.expiresAt).toBe(at.toISOString());
    const { key: rotated, secret } = await rotateKey(as({ kind: 'internal' }), key.id, { graceMs: 60_000 });
    expect(secret).toMatch(/^svc_pk_/);
    expect(rotated.previousSecret).toEqual({
      hint: key.hint,
      expiresAt: new Date(clock.now() + 60_000).toISOString(),
      lastUsedAt: null,
    });
    await revokeKey(as({ kind: 'user', id: 10 }), key.id);
    const rows = await auditOf(key.id);
    expect(rows.map((r) => [r.action, r.actor_kind, r.actor_id, r.actor_name])).toEqual([
      ['key.create', 'user', '10', null],
      ['key.update', 'admin-token', 'tok_1', 'ops'],
      ['key.rotate', 'internal', null, null],
      ['key.revoke', 'user', '10', null],
    ]);
    expect(rows[1].before.expiresAt).toBeNull();
    expect(rows[1].after.expiresAt).toBe(at.toISOString());
    expect(rows[3].after.status).toBe('revoked');
  });

  it('lists expired keys as expired, by the clock', async () => {
    const { key } = await createKey(as(cli), {
      type: 'partner',
      organizationId: 2,
      name: 'soon',
      expiresAt: new Date(clock.now() + 1000),
    });
    expect((await listKeys(as(cli), { organizationId: 2 })).find((k) => k.id === key.id)?.status).toBe('active');
    clock.advance(1000);
    expect((await listKeys(as(cli), { organizationId: 2, status: 'expired' })).map((k) => k.id)).toContain(key.id);
    expect((await listKeys(as(cli), { organizationId: 2, status: 'active' })).map((k) => k.id)).not.toContain(key.id);
  });
});

describe('organizations and sessions', () => {
  it('pause and resume: an audit row each, before and after, and a bump', async () => {
    bumps.length = 0;
    await pauseOrganization(as(cli), 2);
    await resumeOrganization(as(cli), 2);
    expect(bumps).toEqual([2, 2]);
    const rows = await db.query(`SELECT * FROM audit_events WHERE target_type = 'organization' ORDER BY id`);
    expect(rows.map((r) => r.action)).toEqual(['organization.pause', 'organization.resume']);
    expect([rows[0].before.paused, rows[0].after.paused]).toEqual([false, true]);
  });

  it('a session token is audited by its user, never by its token', async () => {
    const s = await createSession(as(cli), { userId: 11, ttlMs: 3_600_000 });
    const rows = await db.query(`SELECT * FROM audit_events WHERE action = 'session.create'`);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(s.token);
  });

  it('the seed audits as the actor seed', async () => {
    const rows = await listAudit(as(cli), { actorKind: 'seed' });
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows[0]).toMatchObject({ action: 'seed.apply', actor: { kind: 'seed', id: null } });
  });
});

describe('the audit table is append-only', () => {
  it('refuses UPDATE, DELETE and TRUNCATE', async () => {
    await expect(db.query(`UPDATE audit_events SET action = 'key.nothing'`)).rejects.toThrow(/append-only/);
    await expect(db.query(`DELETE FROM audit_events`)).rejects.toThrow(/append-only/);
    await expect(db.query(`TRUNCATE audit_events`)).rejects.toThrow(/append-only/);
    // The purge's own setting, set by hand with a recent cut-off, still deletes nothing recent.
    await expect(
      db.tx(async (q) => {
        await q.query(`SELECT set_config('keygate.audit_purge_before', now()::text, true)`);
        await q.query(`DELETE FROM audit_events`);
      }),
    ).rejects.toThrow(/append-only/);
  });

  it('the retention purge deletes the rows older than the retention, and only those', async () => {
    const [{ n: before }] = await db.query(`SELECT count(*)::int AS n FROM audit_events`);
    await ageAuditTrail(db, before, 40);
    await createSession(as(cli), { userId: 11, ttlMs: 3_600_000 });
    // The owner recorded a year (the default): a caller asking for 30 days keeps it.
    expect(await purgeAudit({ db }, 30)).toBe(0);
    await db.query(`UPDATE audit_chain SET retention_days = 30`);
    expect(await purgeAudit({ db }, 30)).toBe(before);
    const rows = await db.query(`SELECT action FROM audit_events`);
    expect(rows.map((r) => r.action)).toEqual(['session.create']);
    expect(await verifyAudit({ db })).toMatchObject({ ok: true, rows: 1 });
  });
});

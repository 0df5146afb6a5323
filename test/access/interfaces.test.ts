// One change, two interfaces, one service layer: the same key lifecycle (create with an expiry and
// metadata, update, rotate, revoke) made through the `keygate` CLI and through the backend's
// /api-keys gives the same key, and each change appears exactly once in the audit trail with its
// actor: the operating-system user for the CLI, the session's user (and the request id) for /api-keys.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { startStack, type Stack } from '../helpers/stack.js';
import { openTestDb } from '../helpers/db.js';
import { seedWith, K } from '../fixtures/seed.js';
import { loadSettings } from '../../src/config/settings.js';
import { runAdminCommand } from '../../src/cli/program.js';

/** The CLI in process, as src/cli.ts runs it, with --json; its stdout. */
async function keygateText(env: Record<string, string>, ...args: string[]): Promise<string> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((c) => ((out += String(c)), true));
  try {
    await runAdminCommand(loadSettings(env, 'migrate'), [...args, '--json']);
  } finally {
    spy.mockRestore();
  }
  return out;
}
const keygate = async (env: Record<string, string>, ...args: string[]): Promise<any> =>
  JSON.parse(await keygateText(env, ...args));
const jsonLines = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));

/** What must agree between the interfaces: everything but identities and instants of each key. */
function comparable(k: Record<string, any>) {
  const {
    id: _id,
    hint: _h,
    createdAt: _c,
    rotatedAt,
    organizationId: _o,
    revokedAt,
    previousSecret,
    secret: _s,
    ...rest
  } = k;
  return {
    ...rest,
    rotated: rotatedAt !== null,
    revoked: revokedAt !== null,
    previous: previousSecret ? { expiresAt: previousSecret.expiresAt !== null } : null,
  };
}

describe.runIf(Boolean(process.env.DATABASE_URL && process.env.REDIS_URL))(
  'the CLI and /api-keys through one service layer',
  () => {
    let s: Stack;
    let db: Awaited<ReturnType<typeof openTestDb>>;
    let env: Record<string, string>;
    const redisPrefix = `t${randomBytes(5).toString('hex')}:`;

    beforeAll(async () => {
      db = await openTestDb();
      s = await startStack({
        db,
        seed: seedWith(),
        appStores: true,
        redisPrefix,
        env: { REDIS_URL: process.env.REDIS_URL! },
      });
      const url = new URL(process.env.DATABASE_URL!);
      url.searchParams.set('options', `-c search_path=${db.schema}`);
      env = { DATABASE_URL: url.toString(), REDIS_URL: process.env.REDIS_URL!, REDIS_KEY_PREFIX: redisPrefix };
    }, 60_000);
    afterAll(async () => {
      await s?.close();
      await db?.drop();
    });

    it('gives the same key for the same changes, and one audit row per change with its actor', async () => {
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
      const later = new Date(Date.now() + 2 * 86_400_000).toISOString();
      const metadata = { customerId: 'cus_1', tier: 'gold' };

      const viaCli = [
        await keygate(
          env,
          'keys',
          'create',
          '--type',
          'personal',
          '--user',
          '10',
          '--name',
          'same',
          '--scopes',
          'workspace:read',
          '--expires-at',
          expiresAt,
          '--metadata',
          JSON.stringify(metadata),
        ),
      ];
      const id = viaCli[0].id;
      viaCli.push(await keygate(env, 'keys', 'update', String(id), '--expires-at', later));
      viaCli.push(await keygate(env, 'keys', 'rotate', String(id), '--grace', '1h'));
      viaCli.push(await keygate(env, 'keys', 'revoke', String(id)));

      const api = async (method: string, path: string, body?: unknown) => {
        const r = await s.session(method, path, K.session, body);
        expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
        return r.body.data;
      };
      const viaApi = [
        await api('POST', '/api-keys', {
          type: 'personal',
          name: 'same',
          scopes: ['workspace:read'],
          expiresAt,
          metadata,
        }),
      ];
      const apiId = viaApi[0].id;
      viaApi.push(await api('PATCH', `/api-keys/${apiId}`, { expiresAt: later }));
      viaApi.push(await api('POST', `/api-keys/${apiId}/rotate`, { graceSeconds: 3600 }));
      viaApi.push(await api('DELETE', `/api-keys/${apiId}`));

      expect(viaApi.map(comparable)).toEqual(viaCli.map(comparable));
      expect(viaCli[2].secret).toMatch(/^svc_pk_/);
      expect(viaApi[2].secret).toMatch(/^svc_pk_/);
      expect(viaCli[3]).toMatchObject({ status: 'revoked', expiresAt: later, metadata });

      const audit = async (key: number) =>
        (
          await db.query(`SELECT * FROM audit_events WHERE target_type = 'key' AND $1 = ANY(target_ids) ORDER BY id`, [
            String(key),
          ])
        ).map((r) => [r.action, r.actor_kind, r.actor_id, r.request_id !== null]);
      const actions = ['key.create', 'key.update', 'key.rotate', 'key.revoke'];
      expect(await audit(id)).toEqual(actions.map((a) => [a, 'cli', userInfo().username, false]));
      expect(await audit(apiId)).toEqual(actions.map((a) => [a, 'user', '10', true]));
      // The trail through the CLI: a page newest first, and the export oldest first, as JSON lines.
      const page = jsonLines(
        await keygateText(env, 'audit', 'list', '--target-type', 'key', '--target', String(apiId)),
      );
      expect(page.map((r) => [r.action, r.actor])).toEqual(
        actions.reverse().map((a) => [a, { kind: 'user', id: '10', name: null }]),
      );
      const exported = jsonLines(await keygateText(env, 'audit', 'export', '--action', 'key.', '--actor', 'cli'));
      expect(exported.map((r) => r.action)).toEqual(['key.create', 'key.update', 'key.rotate', 'key.revoke']);
      expect(exported.every((r) => r.targetIds[0] === String(id))).toBe(true);
      // Never a secret in the trail.
      const trail = JSON.stringify(await db.query(`SELECT * FROM audit_events`));
      for (const k of [...viaCli, ...viaApi]) if (k.secret) expect(trail).not.toContain(k.secret.slice(7));
    }, 60_000);
  },
);

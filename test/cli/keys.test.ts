// `keygate keys|orgs|sessions` as an operator runs them: the real CLI in a child process, over the
// database and Redis of a running gateway. A key minted here works through the gateway; a revocation,
// a pause or a plan change made here applies to the gateway's very next request (its cached principal
// is dropped by the access-version bump, as after the backend's own routes).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { openTestDb } from '../helpers/db.js';
import { seedWith } from '../fixtures/seed.js';
import { freePort } from '../helpers/redis-server.js';
import { runCli, type CliRun } from '../helpers/cli-program.js';
import { bareEnv, keygateInProcess } from './in-process.js';

describe('arguments: one line naming the command and the option, exit code 2, before any database is opened', () => {
  // No DATABASE_URL and a DATA_DIR that cannot be created: only argument checking can answer.
  const env = bareEnv({ DATA_DIR: '/proc/keygate-never' });
  const argumentCases: [string[], RegExp][] = [
    [['keys', 'create', '--name', 'ci'], /^keygate: keys create: --type is required$/],
    [
      ['keys', 'create', '--type', 'robot', '--name', 'ci'],
      /^keygate: keys create: --type must be one of workspace, personal, partner \(got "robot"\)$/,
    ],
    [['keys', 'create', '--type', 'workspace', '--name', 'ci'], /^keygate: keys create: --workspace is required$/],
    [
      ['keys', 'create', '--type', 'workspace', '--workspace', '0', '--name', 'ci'],
      /^keygate: keys create: --workspace must be a positive integer id/,
    ],
    [
      ['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'ci', '--role', 'GOD'],
      /^keygate: keys create: --role must be one of VIEWER, EDITOR, ADMIN, OWNER/,
    ],
    [
      ['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'ci', '--user', '10'],
      /^keygate: keys create: a workspace key takes no --user$/,
    ],
    [
      ['keys', 'create', '--type', 'partner', '--org', '1', '--name', 'p', '--scopes', 'accounts:read'],
      /^keygate: keys create: a partner key takes no --scopes$/,
    ],
    [
      ['keys', 'create', '--type', 'personal', '--user', '10', '--name', 'me', '--scopes', 'Accounts'],
      /^keygate: keys create: --scopes: "Accounts" is not a scope/,
    ],
    [
      ['keys', 'create', '--type', 'personal', '--user', '10', '--name', '  '],
      /^keygate: keys create: --name must be 1 to 100 characters$/,
    ],
    [
      ['keys', 'create', '--type', 'personal', '--user', '10', '--name', 'x', '--colour', 'red'],
      /^keygate: keys create: unknown option --colour$/,
    ],
    [['keys', 'create', '--type', 'personal', '--user'], /^keygate: keys create: --user needs a value$/],
    [['keys', 'revoke'], /^keygate: keys revoke: missing <keyId>$/],
    [['keys', 'revoke', '12', '13'], /^keygate: keys revoke: unexpected argument "13"$/],
    [['keys', 'revoke', '99999999999'], /^keygate: keys revoke: <keyId> must be a positive integer id/],
    [['keys', 'rename'], /^keygate: keys: expected create, list, update, rotate or revoke \(got "rename"\)$/],
    [['orgs', 'plan', '1', 'gold'], /^keygate: orgs plan: <plan> must be one of free, trial, .*, none \(got "gold"\)$/],
    [['orgs', 'pause'], /^keygate: orgs pause: missing <orgId>$/],
    [['sessions', 'create', '--user', '10', '--ttl', 'forever'], /^keygate: sessions create: --ttl must be/],
  ];
  const expectRefused = (r: CliRun, line: RegExp) => {
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr.trimEnd()).toMatch(line);
  };

  it.each(argumentCases)('%j (in process)', async (args, line) => {
    expectRefused(await keygateInProcess(args, env), line);
  });

  // The real program: one argument error of a command, and a command src/cli.ts itself does not know.
  it.concurrent.each([
    argumentCases[0],
    [['frobnicate'], /^keygate: unknown command "frobnicate"/] as [string[], RegExp],
  ])(
    '%j (the program)',
    async (args, line) => {
      expectRefused(await runCli(args, env), line);
    },
    60_000,
  );

  it.concurrent(
    '--help prints the usage and exits 0',
    async () => {
      const r = await runCli(['keys', '--help'], env);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('keys create --type workspace --workspace <id> --name <name>');
    },
    60_000,
  );
});

// Two processes share the database only on a PostgreSQL server, and the revocation reaches the
// gateway's very next request through the access version in Redis (without Redis, only the
// asynchronous NOTIFY would carry it).
describe.runIf(Boolean(process.env.DATABASE_URL && process.env.REDIS_URL))(
  'through a running gateway (needs DATABASE_URL and REDIS_URL)',
  () => {
    let s: Stack;
    let db: Awaited<ReturnType<typeof openTestDb>>;
    let env: NodeJS.ProcessEnv;
    const redisPrefix = `t${randomBytes(5).toString('hex')}:`;
    let ip = 0;
    const get = (key: string, path = '/v2/workspaces/100/tags') =>
      s.request('GET', path, { key, ip: `10.77.0.${++ip}` });

    beforeAll(async () => {
      db = await openTestDb();
      s = await startStack({
        db,
        seed: seedWith(),
        appStores: true,
        redisPrefix,
        env: { REDIS_URL: process.env.REDIS_URL! },
      });
      env = bareEnv({
        DATABASE_URL: process.env.DATABASE_URL!,
        // The CLI reaches the test's own schema through libpq's PGOPTIONS (pg reads it too).
        PGOPTIONS: `-c search_path=${db.schema}`,
        REDIS_URL: process.env.REDIS_URL!,
        REDIS_KEY_PREFIX: redisPrefix,
      });
    }, 60_000);
    afterAll(async () => {
      await s?.close();
      await db?.drop();
    });

    it('mints a workspace key that works at once, then revokes it: the very next request is refused', async () => {
      const created = await runCli(
        [
          'keys',
          'create',
          '--type',
          'workspace',
          '--workspace',
          '100',
          '--name',
          'ci',
          '--scopes',
          'tags:read',
          '--json',
        ],
        env,
      );
      expect(created.code, created.stderr).toBe(0);
      const key = JSON.parse(created.stdout);
      expect(key).toMatchObject({
        type: 'workspace',
        workspaceId: 100,
        organizationId: 1,
        role: 'ADMIN',
        scopes: ['tags:read'],
        revokedAt: null,
      });
      expect(key.secret).toMatch(/^svc_ws_[A-Za-z0-9]{40}$/);
      expect(key.hint).toBe(key.secret.slice(0, 11) + '…');

      // Only a keyed hash is stored (docs/decisions.md section 2).
      const [row] = await db.query(`SELECT * FROM api_keys WHERE id = $1`, [key.id]);
      expect(JSON.stringify(row)).not.toContain(key.secret.slice(7));

      expect((await get(key.secret)).status).toBe(200);
      expect((await get(key.secret)).status).toBe(200); // now served from the gateway's principal cache
      const before = await s.stores.versions.get(1);

      const revoked = await runCli(['keys', 'revoke', String(key.id)], env);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.stdout).toMatch(new RegExp(`^Revoked workspace key ${key.id} "ci"`));
      expect(await s.stores.versions.get(1)).toBe(before + 1);
      const next = await get(key.secret);
      expect(next.status).toBe(401);
      expect(next.body.errorCode).toBe('150002');

      const list = await runCli(['keys', 'list', '--org', '1', '--json'], env);
      const listed = JSON.parse(list.stdout).find((k: { id: number }) => k.id === key.id);
      expect(listed.revokedAt).not.toBeNull();
      expect(list.stdout).not.toMatch(/secret|key_hash|keyHash/);
    }, 120_000);

    it('prints a new secret once in the human form, nowhere on stderr, and the list never shows it', async () => {
      const created = await runCli(
        ['keys', 'create', '--type', 'personal', '--user', '10', '--name', 'mine', '--scopes', 'tags:read'],
        env,
      );
      expect(created.code, created.stderr).toBe(0);
      const secret = /svc_pk_[A-Za-z0-9]{40}/.exec(created.stdout)![0];
      expect(created.stdout.split(secret)).toHaveLength(2);
      expect(created.stderr).not.toContain(secret);
      expect((await get(secret)).status).toBe(200);
      const list = await runCli(['keys', 'list', '--user', '10', '--active'], env);
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/\bmine\b/);
      expect(list.stdout).not.toContain(secret.slice(11));
    }, 120_000);

    it("a partner key works on /v1; a workspace key made for a member is capped by that member's role", async () => {
      // Three independent commands: run side by side.
      const [partnerRun, cappedRun, above] = await Promise.all([
        runCli(['keys', 'create', '--type', 'partner', '--org', '1', '--name', 'p', '--json'], env),
        runCli(
          [
            'keys',
            'create',
            '--type',
            'workspace',
            '--workspace',
            '100',
            '--name',
            'v',
            '--created-by',
            '12',
            '--json',
          ],
          env,
        ),
        runCli(
          [
            'keys',
            'create',
            '--type',
            'workspace',
            '--workspace',
            '100',
            '--name',
            'v',
            '--created-by',
            '11',
            '--role',
            'ADMIN',
          ],
          env,
        ),
      ]);
      const partner = JSON.parse(partnerRun.stdout);
      expect(partner.secret).toMatch(/^svc_v1_/);
      expect((await s.request('GET', '/v1/rate-limit', { apiKey: partner.secret, ip: '10.77.1.1' })).status).toBe(200);

      const capped = JSON.parse(cappedRun.stdout);
      expect(capped).toMatchObject({ role: 'VIEWER', createdBy: 12 });
      expect(above.code).toBe(1);
      expect(above.stderr.trimEnd()).toBe('keygate: keys create: --role ADMIN is above the EDITOR role of user 11');
    }, 120_000);

    it('refuses what is not there with one line and exit code 1', async () => {
      const cases = [
        [['keys', 'revoke', '424242'], 'keygate: keys revoke: no key 424242'],
        [
          ['keys', 'create', '--type', 'workspace', '--workspace', '999', '--name', 'x'],
          'keygate: keys create: no workspace 999',
        ],
        [
          ['keys', 'create', '--type', 'personal', '--user', '10', '--name', 'x', '--scopes', 'nothing:here'],
          'keygate: keys create: --scopes: unknown scope nothing:here (not in ROUTES_FILE)',
        ],
        [['orgs', 'pause', '999'], 'keygate: orgs pause: no organization 999'],
      ] as const;
      // Refusals change nothing: run side by side.
      const runs = await Promise.all(cases.map(([args]) => runCli([...args], env)));
      cases.forEach(([args, line], n) => {
        expect(runs[n].stderr.trimEnd(), args.join(' ')).toBe(line);
        expect(runs[n].code).toBe(line.includes('unknown scope') ? 2 : 1);
      });
    }, 120_000);

    it('orgs pause, resume and plan apply to the very next request', async () => {
      const key = JSON.parse(
        (
          await runCli(
            [
              'keys',
              'create',
              '--type',
              'workspace',
              '--workspace',
              '100',
              '--name',
              'o',
              '--scopes',
              'tags:read',
              '--json',
            ],
            env,
          )
        ).stdout,
      );
      expect((await get(key.secret)).status).toBe(200);

      const paused = await runCli(['orgs', 'pause', '1', '--json'], env);
      expect(JSON.parse(paused.stdout)).toMatchObject({ id: 1, paused: true });
      const refused = await get(key.secret);
      expect(refused.status).toBe(403);
      expect(refused.body.errorCode).toBe('040006');

      await runCli(['orgs', 'resume', '1'], env);
      expect((await get(key.secret)).status).toBe(200);

      const plan = await runCli(['orgs', 'plan', '1', 'free', '--json'], env);
      expect(JSON.parse(plan.stdout)).toMatchObject({ id: 1, plan: 'free' });
      expect((await get(key.secret)).headers.get('x-ratelimit-limit')).toBe('5'); // Free: 5 reads a minute
      await runCli(['orgs', 'plan', '1', 'growth'], env);
      expect((await get(key.secret)).headers.get('x-ratelimit-limit')).toBe('20');
    }, 120_000);

    it('with Redis away the revocation still commits: one warning line, exit code 0', async () => {
      const key = JSON.parse(
        (await runCli(['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'r', '--json'], env))
          .stdout,
      );
      const deadPort = await freePort();
      const r = await runCli(['keys', 'revoke', String(key.id)], {
        ...env,
        REDIS_URL: `redis://127.0.0.1:${deadPort}`,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr.trimEnd().split('\n')).toEqual([
        expect.stringMatching(/^keygate: warning: access version bump failed \(.+\)$/),
      ]);
      const [row] = await db.query(`SELECT revoked_at FROM api_keys WHERE id = $1`, [key.id]);
      expect(row.revoked_at).not.toBeNull();
    }, 120_000);

    it("sessions create: a token for the backend's /api-keys, shown once", async () => {
      const r = await runCli(['sessions', 'create', '--user', '11', '--ttl', '30m', '--json'], env);
      expect(r.code, r.stderr).toBe(0);
      const session = JSON.parse(r.stdout);
      expect(session).toMatchObject({ userId: 11, organizationId: 1 });
      expect(Date.parse(session.expiresAt) - Date.now()).toBeGreaterThan(25 * 60_000);
      const res = await s.session('GET', '/api-keys', session.token);
      expect(res.status).toBe(200);
      const [row] = await db.query(`SELECT count(*)::int AS n FROM sessions WHERE user_id = 11 AND token_hash = $1`, [
        session.token,
      ]);
      expect(row.n).toBe(0); // stored hashed, never as the token
    }, 120_000);
  },
);

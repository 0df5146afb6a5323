// `keygate orgs create` and `keygate keys ...` under a rest profile (PROFILE_FILE, docs/profiles.md): a
// consumer is an organization, its keys are of the profile's key types with their prefixes, their scopes
// among the profile's, their overrides and quota as the workspace API's. The commands run in process
// (runAdminCommand, as src/cli.ts runs it) over PostgreSQL when DATABASE_URL is set, else a PGlite
// DATA_DIR of their own; test/cli/keys.test.ts holds the workspace profile's behaviour.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, pgliteDataDir } from '../helpers/db.js';
import { bareEnv, keygateInProcess } from './in-process.js';

const PROFILE = 'test/fixtures/profiles/b-consumers.yaml';

describe('arguments under a rest profile: refused before any database is opened', () => {
  // A DATA_DIR that cannot be created: only argument checking can answer.
  const env = bareEnv({ DATA_DIR: '/proc/keygate-never', PROFILE_FILE: PROFILE });
  it.each<[string[], string]>([
    [
      ['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'ci'],
      'keygate: keys create: --type must be one of consumer, service (got "workspace")',
    ],
    [
      ['keys', 'create', '--type', 'consumer', '--org', '1', '--workspace', '3', '--name', 'ci'],
      'keygate: keys create: a consumer key takes no --workspace',
    ],
    [
      ['keys', 'create', '--type', 'consumer', '--org', '1', '--role', 'ADMIN', '--name', 'ci'],
      'keygate: keys create: a consumer key takes no --role',
    ],
    [
      ['keys', 'create', '--type', 'service', '--user', '1', '--name', 'ci'],
      'keygate: keys create: a service key takes no --user',
    ],
    [['keys', 'create', '--type', 'consumer', '--name', 'ci'], 'keygate: keys create: --org is required'],
    [
      ['keys', 'create', '--type', 'consumer', '--org', '1', '--name', 'ci', '--scopes', 'Orders:Read'],
      'keygate: keys create: --scopes: "Orders:Read" is not a scope (resource:action)',
    ],
    [
      ['orgs', 'create', '--name', 'acme', '--plan', 'scale'],
      'keygate: orgs create: --plan must be one of free, pro (got "scale")',
    ],
    [['orgs', 'create', '--plan', 'pro'], 'keygate: orgs create: --name is required'],
    [
      ['keys', 'list', '--type', 'partner'],
      'keygate: keys list: --type must be one of consumer, service (got "partner")',
    ],
  ])('%j', async (args, line) => {
    const r = await keygateInProcess(args, env);
    expect([r.code, r.stderr.trim()]).toEqual([2, line]);
  });

  it("the workspace profile (the default) keeps its three types and refuses a rest profile's", async () => {
    const r = await keygateInProcess(
      ['keys', 'create', '--type', 'consumer', '--org', '1', '--name', 'ci'],
      bareEnv({ DATA_DIR: '/proc/keygate-never' }),
    );
    expect([r.code, r.stderr.trim()]).toEqual([
      2,
      'keygate: keys create: --type must be one of workspace, personal, partner (got "consumer")',
    ]);
  });

  it('a profile with a mistake stops the command with its one line, exit code 2', async () => {
    const r = await keygateInProcess(
      ['keys', 'list'],
      bareEnv({ DATA_DIR: '/proc/keygate-never', PROFILE_FILE: 'test/fixtures/profiles/b-none.yaml' }),
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^keygate: .*b-none\.yaml/);
  });
});

describe('consumers and their keys through the CLI', () => {
  let env: NodeJS.ProcessEnv;
  let cleanup: () => Promise<void>;
  const run = async (args: string[]) => keygateInProcess(args, env);
  const json = async (args: string[]) => {
    const r = await run([...args, '--json']);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    if (process.env.DATABASE_URL) {
      const db = await openTestDb();
      // The command reaches the test's own schema through the URL's options (pg passes them on).
      const url = new URL(process.env.DATABASE_URL);
      url.searchParams.set('options', `-c search_path=${db.schema}`);
      env = bareEnv({ DATABASE_URL: url.toString(), PROFILE_FILE: PROFILE });
      cleanup = () => db.drop();
    } else {
      const dir = pgliteDataDir();
      env = bareEnv({ DATA_DIR: dir, PROFILE_FILE: PROFILE });
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
  afterAll(async () => cleanup?.());

  it('creates a consumer on a plan with overrides, and keys of its types with their prefixes and scopes', async () => {
    const created = await run([
      'orgs',
      'create',
      '--name',
      'acme',
      '--plan',
      'pro',
      '--read',
      '100',
      '--monthly-quota',
      '5000',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const id = Number(/^Created consumer (\d+) "acme" on plan pro\.$/m.exec(created.stdout)?.[1]);
    expect(id).toBeGreaterThan(0);
    const limits = await json(['orgs', 'limits', String(id)]);
    expect(limits.overrides).toEqual({ read: 100, write: null, bulk: null, monthlyQuota: 5000 });
    expect(limits.effective).toEqual({ read: 100, write: 200, bulk: 50, monthlyQuota: 5000 });

    const key = await run([
      'keys',
      'create',
      '--type',
      'consumer',
      '--org',
      String(id),
      '--name',
      'checkout',
      '--scopes',
      'orders:read,orders:write',
    ]);
    expect(key.code, key.stderr).toBe(0);
    expect(key.stdout).toContain(`(consumer ${id}, scopes orders:read,orders:write)`);
    const secrets = key.stdout.match(/\bbshop_[A-Za-z0-9]+\b/g) ?? [];
    expect(secrets).toHaveLength(1);
    expect(secrets[0]).toMatch(/^bshop_[A-Za-z0-9]{40}$/);

    const service = await json([
      'keys',
      'create',
      '--type',
      'service',
      '--org',
      String(id),
      '--name',
      'batch',
      '--scopes',
      'catalog:read',
    ]);
    expect(service).toMatchObject({
      type: 'service',
      organizationId: id,
      workspaceId: null,
      userId: null,
      role: null,
      scopes: ['catalog:read'],
    });
    expect(service.secret).toMatch(/^bsvc_[A-Za-z0-9]{40}$/);
    // A hint is the type's prefix and four characters of the random part.
    expect(service.hint).toBe(service.secret.slice(0, 'bsvc_'.length + 4) + '…');

    const listed = await json(['keys', 'list', '--org', String(id), '--type', 'consumer']);
    expect(listed.map((k: { name: string }) => k.name)).toEqual(['checkout']);
    expect(JSON.stringify(listed)).not.toContain(secrets[0]);
  });

  it("refuses a scope outside the profile's, naming it and the profile's scopes", async () => {
    const org = await json(['orgs', 'create', '--name', 'scoped']);
    const r = await run([
      'keys',
      'create',
      '--type',
      'consumer',
      '--org',
      String(org.id),
      '--name',
      'x',
      '--scopes',
      'orders:read,accounts:read',
    ]);
    expect([r.code, r.stderr.trim()]).toEqual([
      2,
      "keygate: keys create: --scopes: unknown scope accounts:read; profile bshop's scopes are orders:read, orders:write, catalog:read",
    ]);
    const none = await run(['keys', 'create', '--type', 'consumer', '--org', '999999', '--name', 'x']);
    expect([none.code, none.stderr.trim()]).toEqual([1, 'keygate: keys create: no organization 999999']);
  });

  it("rotates with the type's prefix, takes per-key overrides, and revokes", async () => {
    const org = await json(['orgs', 'create', '--name', 'rotating', '--plan', 'free']);
    const key = await json(['keys', 'create', '--type', 'consumer', '--org', String(org.id), '--name', 'r']);
    const rotated = await json(['keys', 'rotate', String(key.id), '--grace', '0']);
    expect(rotated.secret).toMatch(/^bshop_[A-Za-z0-9]{40}$/);
    expect(rotated.secret).not.toBe(key.secret);
    const limits = await json(['keys', 'limits', String(key.id), '--read', '7']);
    expect(limits).toMatchObject({
      keyId: key.id,
      plan: 'free',
      overrides: { read: 7, write: null, bulk: null },
      effective: { read: 7, write: 20, bulk: 5 },
    });
    const revoked = await json(['keys', 'revoke', String(key.id)]);
    expect(revoked.status).toBe('revoked');
  });
});

// `keygate export | diff | apply` as CI runs them: the real CLI in child processes, over the database and
// Redis of a running gateway. A key the file adds works at the gateway on the very next request, one it
// drops (--prune) is refused on the very next; `diff --exit-code` tells CI whether there is something to
// apply; a file with a mistake changes nothing; two applies racing leave one state.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startStack, type Stack } from '../helpers/stack.js';
import { openTestDb } from '../helpers/db.js';
import { seedWith } from '../fixtures/seed.js';
import { runCli } from '../helpers/cli-program.js';
import type { StateDocument } from '../../src/access/state/schema.js';

const dir = mkdtempSync(join(tmpdir(), 'kg-state-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file of the test's own, written whole. */
function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('a file with mistakes, before any database is opened', () => {
  // No DATABASE_URL and a DATA_DIR that cannot be created: only the file's checks can answer.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: '/proc/keygate-never' };

  it('exits 2 with one line per mistake naming the file and the field', async () => {
    const bad = file(
      'bad.yaml',
      [
        'version: 1',
        'organizations:',
        '  - name: Acme',
        '    plan: 7',
        '    keys:',
        '      - { name: ci, typo: x }',
      ].join('\n'),
    );
    const r = await runCli(['apply', bad], env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n').sort()).toEqual(
      [
        `${bad}: organizations[0].plan: must be a string`,
        `${bad}: organizations[0].keys[0].typo: unknown field`,
        `${bad}: organizations[0].keys[0].type: is required`,
      ].sort(),
    );
    const missing = await runCli(['diff', join(dir, 'absent.yaml')], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^keygate: diff: cannot read .*absent\.yaml: no such file or directory\n$/);
  }, 60_000);
});

describe.runIf(Boolean(process.env.DATABASE_URL && process.env.REDIS_URL))(
  'through a running gateway (needs DATABASE_URL and REDIS_URL: the CLI processes and the gateway share them)',
  () => {
    let s: Stack;
    let db: Awaited<ReturnType<typeof openTestDb>>;
    let env: NodeJS.ProcessEnv;
    const redisPrefix = `t${randomBytes(5).toString('hex')}:`;
    let ip = 0;
    const get = (key: string) => s.request('GET', '/v2/workspaces/100/tags', { key, ip: `10.78.0.${++ip}` });
    const state = join(dir, 'state.yaml');
    /** The secret of the key the file adds (the first case), which the second prunes. */
    let secret = '';
    const read = () => parse(readFileSync(state, 'utf8')) as StateDocument;
    const acme = (d: StateDocument) => d.organizations!.find((o) => o.name === 'Acme')!;

    beforeAll(async () => {
      db = await openTestDb();
      s = await startStack({
        db,
        seed: seedWith(),
        appStores: true,
        redisPrefix,
        env: { REDIS_URL: process.env.REDIS_URL! },
      });
      env = {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: process.env.DATABASE_URL!,
        // The CLI reaches the test's own schema through libpq's PGOPTIONS (pg reads it too).
        PGOPTIONS: `-c search_path=${db.schema}`,
        REDIS_URL: process.env.REDIS_URL!,
        REDIS_KEY_PREFIX: redisPrefix,
      };
    }, 60_000);
    afterAll(async () => {
      await s?.close();
      await db?.drop();
    });

    it('a key added to the exported file: diff --exit-code 1, apply prints its secret once, it works at once; a second apply changes nothing', async () => {
      const out = await runCli(['export', '--out', state], env);
      expect(out.code, out.stderr).toBe(0);
      expect(readFileSync(state, 'utf8')).toMatch(/^version: 1\nplans:\n/);
      expect((await runCli(['diff', state, '--exit-code'], env)).code).toBe(0);

      const doc = read();
      acme(doc).keys!.push({ name: 'from git', type: 'workspace', workspace: 'Main', scopes: ['tags:read'] });
      writeFileSync(state, stringify(doc));
      const diff = await runCli(['diff', state, '--exit-code'], env);
      expect(diff.code, diff.stderr).toBe(1);
      expect(diff.stdout).toContain(
        [
          '+ create key "from git" of organization "Acme"',
          '    type: "workspace"',
          '    workspace: "Main"',
          '    role: "ADMIN"',
          '    scopes: ["tags:read"]',
          '1 change: 1 to create.',
        ].join('\n'),
      );

      const applied = await runCli(['apply', state], env);
      expect(applied.code, applied.stderr).toBe(0);
      secret = /key "from git" of organization "Acme": (svc_ws_[A-Za-z0-9]{40})/.exec(applied.stdout)![1];
      expect(applied.stdout.split(secret)).toHaveLength(2);
      expect((await get(secret)).status).toBe(200);
      const [audit] = await db.query(`SELECT * FROM audit_events WHERE action = 'key.create' ORDER BY id DESC LIMIT 1`);
      expect(audit).toMatchObject({ actor_kind: 'cli', actor_name: 'apply state.yaml' });
      expect(audit.request_id).toMatch(/^apply-[0-9a-f]{16}$/);

      const again = await runCli(['apply', state], env);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^No changes\.\n/);
    }, 180_000);

    it('--prune revokes the key the file no longer has: the very next request is refused', async () => {
      const doc = read();
      acme(doc).keys = acme(doc).keys!.filter((k) => k.name !== 'from git');
      writeFileSync(state, stringify(doc));
      const kept = await runCli(['apply', state], env);
      expect(kept.stdout).toMatch(
        /^No changes\.\nNot in the file, left as is:\n.*key "from git" of organization "Acme" \(--prune would revoke it\)/m,
      );

      expect((await get(secret)).status).toBe(200); // kept, and cached by the gateway
      const before = await s.stores.versions.get(1);
      const pruned = await runCli(['apply', state, '--prune', '--json'], env);
      expect(pruned.code, pruned.stderr).toBe(0);
      expect(JSON.parse(pruned.stdout).changes).toEqual([
        { kind: 'revoke', what: 'key "from git" of organization "Acme"', fields: [] },
      ]);
      expect(await s.stores.versions.get(1)).toBeGreaterThan(before);
      const next = await get(secret);
      expect(next.status).toBe(401);
      expect(next.body.errorCode).toBe('150002');
    }, 120_000);

    it('a file with a mistake changes nothing and names the file and the field', async () => {
      const doc = read();
      const audit = await db.query(`SELECT count(*)::int AS n FROM audit_events`);
      const keys = acme(doc).keys!;
      const i = keys.findIndex((k) => k.name === 'ws admin');
      keys[i].scopes = [...keys[i].scopes!, 'acounts:read'];
      doc.organizations!.push({ name: 'Not made', plan: 'growth' });
      const bad = file('state-bad.yaml', stringify(doc));
      const r = await runCli(['apply', bad], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `${bad}: organizations[0].keys[${i}].scopes[${keys[i].scopes.length - 1}]: unknown scope "acounts:read"\n`,
      );
      expect(await db.query(`SELECT count(*)::int AS n FROM audit_events`)).toEqual(audit);
      expect(await db.query(`SELECT id FROM organizations WHERE name = 'Not made'`)).toEqual([]);
    }, 120_000);

    it('two apply processes racing leave one state: one applies, the other finds nothing to do', async () => {
      const doc = read();
      doc.organizations!.push({
        name: 'Raced',
        plan: 'starter',
        users: [{ email: 'a@raced.test', role: 'OWNER' }],
        workspaces: [{ name: 'W', members: [{ email: 'a@raced.test', role: 'ADMIN' }] }],
        keys: [{ name: 'only one', type: 'workspace', workspace: 'W', scopes: ['tags:read'] }],
      });
      const raced = file('raced.yaml', stringify(doc));
      const runs = await Promise.all([runCli(['apply', raced], env), runCli(['apply', raced], env)]);
      expect(runs.map((r) => r.code)).toEqual([0, 0]);
      expect(runs.map((r) => r.stdout.split('\n').find((l) => /^(Applied|No changes)/.test(l))).sort()).toEqual([
        'Applied 5 changes (5 to create).',
        'No changes.',
      ]);
      const orgs = await db.query(`SELECT id FROM organizations WHERE name = 'Raced'`);
      expect(orgs).toHaveLength(1);
      expect(await db.query(`SELECT name FROM api_keys WHERE organization_id = $1`, [orgs[0].id])).toEqual([
        { name: 'only one' },
      ]);
    }, 120_000);
  },
);

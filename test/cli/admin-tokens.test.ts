// `keygate admin-tokens create|list|revoke` as an operator runs them (the real CLI in a child process)
// against the database of a running admin API: a token made here is printed once, stored only as a
// keyed hash, signs in at once, and is refused from its next request once revoked here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, fetchRes, type Stack } from '../helpers/stack.js';
import { runCli } from '../helpers/cli-program.js';

describe.runIf(Boolean(process.env.DATABASE_URL))(
  'admin-tokens (needs DATABASE_URL: the CLI and the admin API share a database)',
  () => {
    let stack: Stack;
    let env: NodeJS.ProcessEnv;
    beforeAll(async () => {
      stack = await startStack({ env: { ADMIN_API_PORT: '0' } });
      env = {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: process.env.DATABASE_URL!,
        PGOPTIONS: `-c search_path=${stack.db.schema}`,
        LOG_LEVEL: 'silent',
      };
    });
    afterAll(() => stack?.close());
    const me = (token: string) =>
      fetchRes(stack.app.adminApiUrl + '/api/me', { headers: { authorization: `Bearer ${token}` } });

    it('creates, lists and revokes; the token is printed once and never stored', async () => {
      const made = await runCli(['admin-tokens', 'create', '--name', 'ops', '--role', 'read'], env);
      expect(made.code, made.stderr).toBe(0);
      const token = /kga_[A-Za-z0-9]{40}/.exec(made.stdout)![0];
      expect(made.stdout).toMatch(/shown only this once/);
      expect((await me(token)).body).toMatchObject({ name: 'ops', role: 'read' });

      const rows = await stack.db.query(`SELECT * FROM admin_tokens WHERE name = 'ops'`);
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(token);
      expect(rows[0].created_by).toMatch(/^cli:/);

      const list = await runCli(['admin-tokens', 'list', '--json'], env);
      expect(list.code).toBe(0);
      expect(list.stdout).not.toContain(token);
      const listed = JSON.parse(list.stdout).find((t: { name: string }) => t.name === 'ops');
      expect(listed).toMatchObject({ role: 'read', revokedAt: null });
      expect(listed.lastUsedAt).not.toBeNull();

      const revoked = await runCli(['admin-tokens', 'revoke', String(listed.id), '--json'], env);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(JSON.parse(revoked.stdout).revokedAt).not.toBeNull();
      expect((await me(token)).status).toBe(401);
    }, 180_000);

    it('refuses bad arguments with exit code 2 and an unknown token id with 1', async () => {
      const bad = await runCli(['admin-tokens', 'create', '--name', 'x', '--role', 'admin'], env);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--role must be one of read, write/);
      const missing = await runCli(['admin-tokens', 'revoke', '999999'], env);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/no admin token 999999/);
    }, 120_000);
  },
);

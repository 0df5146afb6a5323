// PROFILE_FILE seen from outside the real program: a profile with a mistake stops the start with exit
// code 2 and one line naming the file, the field and the fix; a running program whose profile is
// rewritten with a mistake keeps serving the one in force and logs why (docs/profiles.md, Mistakes).
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runCli } from '../helpers/cli-program.js';
import { startProgram } from '../helpers/program.js';
import { freePort } from '../helpers/redis-server.js';

const dir = mkdtempSync(join(tmpdir(), 'kg-profile-program-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The program's environment without the test's services: the profile is refused before any is opened. */
function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  delete base.REDIS_URL;
  return { ...base, DATA_DIR: 'memory://', ...extra };
}

describe('a profile with a mistake at the start', () => {
  it.each([
    [
      'a route naming no service',
      (f: { routes: { service?: string }[] }) => (f.routes[1].service = 'billing'),
      'routes.1.service: no service billing; define it under "services" or name one of default, orders, catalog',
    ],
    [
      'an unknown field',
      (f: { key: Record<string, unknown> }) => (f.key.secret = 'x'),
      'key.secret: unknown field; remove it or use one of header, types',
    ],
  ])('%s: exit 2 and one line naming the file, the field and the fix', async (_, mistake, line) => {
    const f = parse(readFileSync('test/fixtures/profiles/shop.yaml', 'utf8'));
    mistake(f);
    const file = join(dir, `${line.split(':')[0]}.yaml`);
    writeFileSync(file, stringify(f));
    const run = await runCli(['start'], env({ PROFILE_FILE: file, PORT: '0', ADMIN_PORT: '0', BACKEND_PORT: '0' }));
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`keygate: profile ${file}: ${line}\n`);
  });
});

describe('a running program whose profile is rewritten', () => {
  const file = join(dir, 'workspace.yaml');
  const good = readFileSync('profiles/workspace.yaml', 'utf8');
  let child: ChildProcess;
  let output: () => string;
  let port: number;
  beforeAll(async () => {
    writeFileSync(file, good);
    [port] = [await freePort()];
    ({ child, output } = await startProgram({
      PORT: String(port),
      ADMIN_PORT: String(await freePort()),
      BACKEND_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      DATA_DIR: 'memory://',
      PROFILE_FILE: file,
      LOG_LEVEL: 'info',
    }));
  }, 90_000);
  afterAll(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
  });

  /** The log lines of a message, parsed. */
  const lines = (msg: string) =>
    output()
      .split('\n')
      .filter((l) => l.includes(msg))
      .map((l) => JSON.parse(l) as { msg: string; err?: string; profile?: string });
  const until = async (msg: string, count: number) => {
    const deadline = Date.now() + 10_000;
    while (lines(msg).length < count) {
      if (Date.now() > deadline) throw new Error(`no "${msg}" line: ${output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const rateLimit = () =>
    fetch(`http://127.0.0.1:${port}/v2/workspaces/100/rate-limit`, {
      headers: { authorization: 'Bearer svc_ws_DemoWorkspaceAdminKey0000000000000001' },
    });

  it('keeps serving the profile in force, logs the mistake, and takes the fixed file', async () => {
    expect((await rateLimit()).status).toBe(200);

    const bad = good.replace('prefix: svc_pk_', 'prefix: svc_ws_pk_');
    expect(bad).not.toBe(good);
    writeFileSync(file, bad);
    await until('configuration reload refused', 1);
    expect(lines('configuration reload refused')[0].err).toBe(
      `profile ${file}: interfaces.0.key.types.1.prefix: "svc_ws_pk_" starts with "svc_ws_", the prefix of interfaces.0.key.types.0, so a key of one type would be read as the other; make neither prefix start the other`,
    );
    expect(child.exitCode).toBeNull();
    expect((await rateLimit()).status).toBe(200);

    writeFileSync(file, good.replace('address: 100', 'address: 120'));
    await until('configuration reloaded', 1);
    expect(lines('configuration reloaded')[0].profile).toBe(file);
    expect((await rateLimit()).status).toBe(200);
  });
});

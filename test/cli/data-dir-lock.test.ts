// The CLI beside a running all-in-one on PGlite: PGlite is one process's database, so a second process
// opening the same DATA_DIR would work on a copy the running program never sees (and its writes would be
// lost at the program's stop). The real program and the real CLI, as child processes, on one DATA_DIR:
// while the program runs, the CLI refuses with one line naming DATA_DIR and the program's pid, and exits
// non-zero; once the program stops (cleanly, or killed: the stale lock is recognised by its pid), the CLI
// works and what it wrote is there at the next start.
import { rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startProgram, type Program } from '../helpers/program.js';
import { runCli } from '../helpers/cli-program.js';
import { freePort } from '../helpers/redis-server.js';
import { pgliteDataDir } from '../helpers/db.js';

// Already migrated (a copy of the run's PGlite template): an initdb and the migrations in the program
// took more than its 60 s to get ready on two busy cores.
const dataDir = pgliteDataDir();
const started: ChildProcess[] = [];

/** The CLI's environment: this DATA_DIR, none of the machine's DATABASE_URL or REDIS_URL. */
const cliEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir };

async function start(): Promise<Program> {
  const [port, admin, backend] = [await freePort(), await freePort(), await freePort()];
  const p = await startProgram({
    PORT: String(port),
    ADMIN_PORT: String(admin),
    BACKEND_PORT: String(backend),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  });
  started.push(p.child);
  return p;
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once('exit', () => done());
  });
}

afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

describe('keygate keys against the DATA_DIR of a running all-in-one', () => {
  it('refuses writes and reads with one line while the program runs; works after a clean stop and after a kill', async () => {
    const first = await start();
    const pid = first.child.pid!;
    const held = new RegExp(`^keygate: setting DATA_DIR: .*\\b${pid}\\b.*\\n$`);
    const commands = [
      ['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'lost'],
      ['keys', 'revoke', '1000'],
      ['keys', 'list'],
    ];
    for (const args of commands) {
      const r = await runCli(args, cliEnv);
      expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).not.toBe(0);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr, args.join(' ')).toMatch(held);
    }

    // A clean stop releases DATA_DIR: the CLI's write lands and is there at the next start.
    first.child.kill('SIGTERM');
    await exited(first.child);
    const created = await runCli(
      ['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'kept', '--json'],
      cliEnv,
    );
    expect(created.code, created.stderr).toBe(0);
    const keyId = JSON.parse(created.stdout).id as number;
    const gone = await runCli(
      ['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'gone', '--json'],
      cliEnv,
    );
    const goneId = JSON.parse(gone.stdout).id as number;
    const revoked = await runCli(['keys', 'revoke', String(goneId)], cliEnv);
    expect(revoked.code, revoked.stderr).toBe(0);

    // Killed, the program leaves its lock behind: a lock whose pid is gone no longer holds DATA_DIR.
    const second = await start();
    expect((await runCli(['keys', 'list'], cliEnv)).code).not.toBe(0);
    second.child.kill('SIGKILL');
    await exited(second.child);
    const list = await runCli(['keys', 'list', '--json'], cliEnv);
    expect(list.code, list.stderr).toBe(0);
    const keys = JSON.parse(list.stdout) as { id: number; status: string; name: string }[];
    expect(keys.find((k) => k.id === keyId)).toMatchObject({ name: 'kept', status: 'active' });
    expect(keys.find((k) => k.id === goneId)).toMatchObject({ status: 'revoked' });
    expect(keys.some((k) => k.name === 'lost')).toBe(false);
  }, 180_000);
});

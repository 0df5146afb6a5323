// What the diagnostics that start compiled gateways share: a private redis-server and the trivial
// upstream on checked ports, and a PostgreSQL schema of the run's own.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort, waitForPort } from '../procs.js';

const UPSTREAM = fileURLToPath(new URL('../peers/upstream.mjs', import.meta.url));

type Start = (name: string, cmd: string, args: string[], env: Record<string, string>) => ChildProcess;

/** redis-server and the upstream, started through the diagnostic's own `start` (its logs), both listening. */
export async function startRedisAndUpstream(start: Start): Promise<{ redisPort: number; upstreamPort: number }> {
  const redisPort = await freePort();
  start(
    'redis',
    'redis-server',
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {},
  );
  const upstreamPort = await freePort();
  start('upstream', process.execPath, [UPSTREAM], { PORT: String(upstreamPort) });
  await Promise.all([waitForPort(redisPort, 10_000), waitForPort(upstreamPort, 10_000)]);
  return { redisPort, upstreamPort };
}

/** A new schema named `<prefix>_<random>`: the DATABASE_URL that puts keygate in it, and its drop. */
export async function freshSchema(databaseUrl: string, prefix: string): Promise<{ url: URL; drop(): Promise<void> }> {
  const schema = `${prefix}_${randomBytes(3).toString('hex')}`;
  const sql = async (text: string) => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(text).finally(() => client.end());
  };
  await sql(`CREATE SCHEMA ${schema}`);
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url, drop: () => sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) };
}

/**
 * SIGTERM to every process but redis-server, their exits awaited (at most `ms`). A gateway writes what it
 * holds (its keys' last use) to PostgreSQL as it stops: stopped after its schema was dropped, it logged
 * "last-use write failed" instead.
 */
export async function stopBeforeDrop(procs: ChildProcess[], ms = 5_000): Promise<void> {
  const running = procs.filter((p) => p.spawnfile !== 'redis-server' && p.exitCode === null && p.signalCode === null);
  const exited = Promise.all(running.map((p) => new Promise((resolve) => p.once('exit', resolve))));
  for (const p of running) p.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * Runs a diagnostic's `main`, then stops every process it started, whatever happened: a failure is
 * printed and sets the exit code, and the processes get half a second for SIGTERM before the exit.
 */
export function runThenStop(main: () => Promise<void>, procs: ChildProcess[]): void {
  main()
    .catch((err) => {
      console.error(err);
      process.exitCode = 1;
    })
    .finally(async () => {
      for (const p of procs) p.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 500));
      process.exit();
    });
}

/**
 * Asks a forked child over IPC: sends `msg` (none: only waits) and resolves with the field `key` of the
 * first message that has it.
 */
export function askChild(child: ChildProcess, msg: string, key: string): Promise<unknown> {
  return new Promise((res) => {
    const on = (m: Record<string, unknown>) => {
      if (key in m) {
        child.off('message', on);
        res(m[key]);
      }
    };
    child.on('message', on);
    if (msg) child.send(msg);
  });
}

/** The child's `ready` message (its URLs), or a failure naming its log if it exits first. */
export function childReady(child: ChildProcess, log: string): Promise<Record<string, string>> {
  return Promise.race([
    askChild(child, '', 'ready') as Promise<Record<string, string>>,
    new Promise<never>((_, rej) => child.once('exit', () => rej(new Error(`child exited; see ${log}`)))),
  ]);
}

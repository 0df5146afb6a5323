// The real gateway program (`keygate gateway`, test/helpers/cli-program.ts; one process or WORKERS of
// them) on the test's own PostgreSQL schema, seeded with test/fixtures/seed.ts, and optionally the
// test's Redis under a prefix of its own. Starting the gateway alone skips the all-in-one's PGlite and backend, the slow part of a
// start on a busy machine. Needs DATABASE_URL (a real PostgreSQL: the program is another process).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openTestDb } from './db.js';
import { freePort } from './redis-server.js';
import { untilReady } from './program.js';
import { cliArgs } from './cli-program.js';
import { seedWith } from '../fixtures/seed.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';

export interface GatewayProgram {
  child: ChildProcess;
  port: number;
  admin: number;
  output(): string;
  /** SIGKILL if still running, and drop the schema. */
  close(): Promise<void>;
}

export async function startGatewayProgram(
  env: Record<string, string>,
  opts: { redis?: boolean } = {},
): Promise<GatewayProgram> {
  const pgUrl = process.env.DATABASE_URL;
  if (!pgUrl) throw new Error('startGatewayProgram needs DATABASE_URL');
  const db = await openTestDb();
  await applySeed(db, parseSeed(seedWith()));
  const url = new URL(pgUrl);
  url.searchParams.set('options', `-c search_path=${db.schema}`);
  const [port, admin] = [await freePort(), await freePort()];
  const base = { ...process.env };
  delete base.REDIS_URL;
  const child = spawn(process.execPath, [...(await cliArgs()), 'gateway'], {
    env: {
      ...base,
      DATABASE_URL: url.toString(),
      ...(opts.redis && process.env.REDIS_URL
        ? { REDIS_URL: process.env.REDIS_URL, REDIS_KEY_PREFIX: `gp${randomBytes(4).toString('hex')}:` }
        : {}),
      GATEWAY_SECRET: 'test-gateway-secret-0123456789',
      PLANS_FILE: 'bench/plans.json',
      PORT: String(port),
      ADMIN_PORT: String(admin),
      HOST: '127.0.0.1',
      TRUST_PROXY: '127.0.0.1',
      ACCESS_LOG: 'off',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    await db.drop();
  };
  try {
    // A start takes a few seconds; on a machine loaded by other suites it has taken over a minute.
    await untilReady(`http://127.0.0.1:${admin}/readyz`, child, () => out, 150_000);
  } catch (err) {
    await close();
    throw err;
  }
  return { child, port, admin, output: () => out, close };
}

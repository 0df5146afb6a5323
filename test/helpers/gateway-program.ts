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
  const started = await spawnGatewayOn(schemaUrl(pgUrl, db.schema), {
    ...(opts.redis && process.env.REDIS_URL
      ? { REDIS_URL: process.env.REDIS_URL, REDIS_KEY_PREFIX: `gp${randomBytes(4).toString('hex')}:` }
      : {}),
    ...env,
  });
  const { child } = started;
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    await db.drop();
  };
  try {
    await started.ready;
  } catch (err) {
    await close();
    throw err;
  }
  return { ...started, close };
}

/** The server's URL with `schema` as its search path: a program then works in the test's own schema. */
export function schemaUrl(pgUrl: string, schema: string): string {
  const url = new URL(pgUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

export interface SpawnedGateway {
  child: ChildProcess;
  port: number;
  admin: number;
  output(): string;
  /** Resolves once /readyz answers 200; rejects when the program exits first or takes too long. */
  ready: Promise<void>;
}

/**
 * `keygate gateway` on `databaseUrl` (free ports, loopback, quiet logs, the test's secret; `env` wins), its
 * output kept. The shell's REDIS_URL is not passed on: a test names the Redis its program uses.
 */
export async function spawnGatewayOn(databaseUrl: string, env: Record<string, string>): Promise<SpawnedGateway> {
  const [port, admin] = [await freePort(), await freePort()];
  const base = { ...process.env };
  delete base.REDIS_URL;
  const child = spawn(process.execPath, [...(await cliArgs()), 'gateway'], {
    env: {
      ...base,
      DATABASE_URL: databaseUrl,
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
  // A start takes a few seconds; on a machine loaded by other suites it has taken over a minute.
  const ready = untilReady(`http://127.0.0.1:${admin}/readyz`, child, () => out, 150_000);
  ready.catch(() => {}); // the caller awaits it; this only keeps an early exit from being unhandled
  return { child, port, admin, output: () => out, ready };
}

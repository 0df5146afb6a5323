// docs/fronting.md: the block between the fronting markers is run as written, in a copy
// of the repository, by bash, on free ports and a fresh database: build, the stand-in service, the seed,
// a key minted with the CLI, the gateway in front of the service, and the calls through it.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The block needs a PostgreSQL server to create a database on, a Redis, and curl (every node-svc
// machine, CI included); a laptop without them skips it.
const CAN = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL) && spawnSync('curl', ['--version']).status === 0;

/** The page's block, with its fixed ports and database replaced by this run's. */
function readmeBlock(sub: Record<string, string>): string {
  const readme = readFileSync(join(ROOT, 'docs', 'fronting.md'), 'utf8');
  const begin = readme.indexOf('<!-- fronting:begin -->');
  const end = readme.indexOf('<!-- fronting:end -->');
  expect(begin).toBeGreaterThan(0);
  let block = readme
    .slice(begin, end)
    .split('\n')
    .filter((l) => !l.startsWith('```') && !l.startsWith('<!--'))
    .join('\n');
  for (const [from, to] of Object.entries(sub)) block = block.split(from).join(to);
  return block;
}

let copy = '';
let database = '';
let output = '';
let exitCode: number | null = null;
const admin = () => new pg.Client({ connectionString: process.env.DATABASE_URL });

beforeAll(async () => {
  if (!CAN) return;
  const tmp = mkdtempSync(join(tmpdir(), 'kg-fronting-'));
  copy = join(tmp, 'keygate');
  for (const p of [
    'src',
    'config',
    'examples',
    'bench',
    'proto',
    'profiles',
    'package.json',
    'tsconfig.json',
    'tsconfig.build.json',
  ])
    cpSync(join(ROOT, p), join(copy, p), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  database = `fronting_${process.pid}_${Date.now()}`;
  const c = admin();
  await c.connect();
  await c.query(`CREATE DATABASE ${database}`);
  await c.end();
  const [service, gateway, adminPort] = [await freePort(), await freePort(), await freePort()];
  const dbUrl = new URL(process.env.DATABASE_URL!);
  dbUrl.pathname = `/${database}`;
  const script = readmeBlock({
    '3000': String(service),
    '8080': String(gateway),
    '9090': String(adminPort),
    'postgres://postgres@127.0.0.1:5432/keygate': dbUrl.toString(),
    'redis://127.0.0.1:6379': process.env.REDIS_URL!,
  });
  // Every background job of the block (the service, the gateway) is stopped when it ends.
  const wrapped = `set -eo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n${script}\n`;
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  delete env.GATEWAY_SECRET;
  exitCode = await new Promise<number | null>((resolve) => {
    const child = spawn('timeout', ['240', 'bash', '-c', wrapped], { cwd: copy, env: { ...env, LOG_LEVEL: 'warn' } });
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    child.on('exit', (code) => resolve(code));
  });
}, 300_000);

afterAll(async () => {
  if (!CAN) return;
  if (copy) rmSync(dirname(copy), { recursive: true, force: true });
  if (database) {
    const c = admin();
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await c.end();
  }
});

/** The JSON documents the block's curl calls printed. */
const answers = () =>
  output
    .replace(/\}\{/g, '}\n{') // curl prints no newline after a body
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return null;
      }
    })
    .filter((a) => a && !('level' in a));

describe.runIf(CAN)('docs/fronting.md, Fronting your service', () => {
  it('runs to the end', () => {
    expect(exitCode, output).toBe(0);
  });

  it('the service created an item for the minted key, through the gateway', () => {
    const created = answers().find((a) => a.data?.name === 'first item');
    expect(created, output).toBeDefined();
    expect(created.data.createdByKey).toBeGreaterThan(0);
  });

  it('the service read the verified identity of the key', () => {
    const listed = answers().find((a) => a.calledBy);
    expect(listed, output).toBeDefined();
    expect(listed.calledBy).toMatchObject({ workspaceId: 100, role: 'ADMIN' });
    expect(listed.data).toHaveLength(1);
  });

  it('another workspace is refused by the gateway, and the service refuses what did not come through it', () => {
    expect(
      answers().find((a) => a.errorCode === '150004'),
      output,
    ).toBeDefined();
    expect(
      answers().find((a) => a.error === 'unauthenticated'),
      output,
    ).toBeDefined();
  });
});

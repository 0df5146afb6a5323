// The compiled program is complete: `npm run build` in a copy of the repository, then the copy runs
// with its production dependencies only (as after `npm ci --omit=dev`) and from another directory:
// `node dist/cli.js start` answers through the gateway, and the npm scripts the README calls
// production (`npm run gateway|backend|migrate|seed|keygate`) run dist/ without tsx or tsc.
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';

const ROOT = resolve('.');
const DEMO_KEY = 'svc_ws_DemoWorkspaceAdminKey0000000000000001';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    npm_config_update_notifier: 'false',
    ...env,
  };
  return new Promise((done) => {
    execFile(cmd, args, { cwd, env: base, timeout: 120_000 }, (err, stdout, stderr) =>
      done({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** node_modules as `npm ci --omit=dev` leaves it: a link to each package the lock file does not mark dev. */
function productionModules(into: string): string {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
  };
  const modules = join(into, 'node_modules');
  for (const [path, meta] of Object.entries(lock.packages)) {
    if (!/^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) || meta.dev || meta.devOptional) continue;
    if (!existsSync(join(ROOT, path))) continue; // an optional package for another platform
    mkdirSync(dirname(join(into, path)), { recursive: true });
    symlinkSync(join(ROOT, path), join(into, path), 'dir');
  }
  return modules;
}

let copy: string;
/** The first command run in the copy, with the compiler installed and no dist/: it builds dist/ first. */
let firstRun: Run;
let allModules: string;
let prodModules: string;
const useModules = (m: string) => {
  rmSync(join(copy, 'node_modules'), { force: true, recursive: false });
  symlinkSync(m, join(copy, 'node_modules'), 'dir');
};

beforeAll(async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'kg-build-'));
  copy = join(tmp, 'keygate');
  // What the Dockerfile's build stage copies.
  for (const p of [
    'src',
    'proto',
    'config',
    'profiles',
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'tsconfig.build.json',
  ])
    cpSync(join(ROOT, p), join(copy, p), { recursive: true });
  allModules = join(ROOT, 'node_modules');
  prodModules = productionModules(join(tmp, 'prod'));
  expect(existsSync(join(prodModules, 'pg'))).toBe(true);
  expect(existsSync(join(prodModules, 'tsx')) || existsSync(join(prodModules, 'typescript'))).toBe(false);
  // The one build of this file, through the launcher (`npm run keygate` runs `npm run build` when
  // dist/ is missing): every case below runs what it built.
  useModules(allModules);
  firstRun = await run('npm', ['run', 'keygate', '--silent', '--', '--help'], copy);
  expect(firstRun.code, firstRun.stdout + firstRun.stderr).toBe(0);
  useModules(prodModules);
}, 180_000);

afterAll(() => {
  if (copy) rmSync(dirname(copy), { recursive: true, force: true });
});

describe('npm run build', () => {
  it('with the compiler installed, a missing dist/ is built first, its output kept off stdout', () => {
    expect(firstRun.stderr).toContain('keygate: dist/ is missing: building it (npm run build)');
    expect(firstRun.stdout).toMatch(/^usage: keygate <command>/);
    expect(existsSync(join(copy, 'dist/db/migrations/001_access.sql'))).toBe(true);
    expect(existsSync(join(copy, 'dist/proto/envoy/service/auth/v3/external_auth.proto'))).toBe(true);
  });

  it('puts the SQL migrations next to the compiled module that reads them', () => {
    const sql = (dir: string) =>
      readdirSync(dir)
        .filter((f) => f.endsWith('.sql'))
        .sort();
    expect(sql(join(copy, 'dist/db/migrations'))).toEqual(sql(join(ROOT, 'src/db/migrations')));
    expect(readFileSync(join(copy, 'dist/cli.js'), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
  });

  it('node dist/cli.js start, from another directory and without dev dependencies, answers through the gateway and drains on SIGTERM', async () => {
    const [port, admin, backend] = [await freePort(), await freePort(), await freePort()];
    const child = spawn(process.execPath, [join(copy, 'dist/cli.js'), 'start'], {
      cwd: tmpdir(),
      env: {
        PATH: process.env.PATH,
        DATA_DIR: 'memory://',
        HOST: '127.0.0.1',
        PORT: String(port),
        ADMIN_PORT: String(admin),
        BACKEND_PORT: String(backend),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const ready = await fetch(`http://127.0.0.1:${admin}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
        if (ready === 200) break;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`did not start: ${out}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const res = await fetch(`http://127.0.0.1:${port}/v2/workspaces/100/accounts`, {
        headers: { authorization: `Bearer ${DEMO_KEY}` },
      });
      expect(res.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 120_000);

  it('npm run seed and npm run keygate run the compiled program without dev dependencies', async () => {
    const env = { DATA_DIR: join(dirname(copy), 'pglite'), LOG_LEVEL: 'warn' };
    const seeded = await run('npm', ['run', 'seed', '--silent'], copy, env);
    expect(seeded.code, seeded.stderr).toBe(0);
    const listed = await run('npm', ['run', 'keygate', '--silent', '--', 'keys', 'list', '--json'], copy, env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).map((k: { name: string }) => k.name)).toContain('demo workspace key (ADMIN)');
  }, 120_000);

  it('without dist/ and without the compiler, npm run gateway says to build first: one line, exit code 2', async () => {
    rmSync(join(copy, 'dist'), { recursive: true });
    const r = await run('npm', ['run', 'gateway', '--silent'], copy, {
      DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
      GATEWAY_SECRET: '0123456789abcdef0123',
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd()).toBe(
      'keygate: dist/ is missing: run `npm run build` (it needs the dev dependencies) before running keygate without them',
    );
  }, 60_000);
});

// What the gateway's own process loads (issue 25: its RSS after many keys). `keygate gateway` runs the
// /v2 pipeline only: the admin API, the console, the reference backend, the load test, the OpenAPI
// tools, the OpenTelemetry SDK (tracing not configured) and the verifier's JOSE code are not loaded,
// and of undici only the Pool the forwarder uses and its table of header names (undici's index would
// load 95 of its files instead of 23, about 10 MB more RSS: src/gateway/undici-pool.d.ts). Each of
// these is some MB of heap and code that a gateway keeps for nothing (bench/RESULTS.md). Seen from
// outside: the program runs from its sources (`node --import tsx src/cli.ts gateway`, every module a
// file of its own, unlike the tests' bundle) with a preloaded hook that writes the URL of every module
// loaded, ES modules and CommonJS alike.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { untilReady } from '../helpers/program.js';
import { openTestDb } from '../helpers/db.js';

const ROOT = resolve('.');
const HOOK = `
import { register, createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
register('data:text/javascript,' + encodeURIComponent(\`
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.MODULES_FILE, url + '\\\\n');
  return next(url, context);
}\`));
// CommonJS modules required by CommonJS (pg, ioredis, undici's files) do not pass the hooks above.
const Module = createRequire(import.meta.url)('node:module');
const load = Module._load;
Module._load = function (request, parent, ...rest) {
  try {
    const file = Module._resolveFilename(request, parent);
    if (file.startsWith('/')) appendFileSync(process.env.MODULES_FILE, 'file://' + file + '\\n');
  } catch {}
  return load.call(this, request, parent, ...rest);
};
`;

let child: ChildProcess;
let loaded: string[];
let db: Awaited<ReturnType<typeof openTestDb>>;

// `keygate gateway` refuses to start without DATABASE_URL (its gateways share PostgreSQL; PGlite's DATA_DIR
// is one process's), so on the default path (PGlite) there is no gateway process to look at.
const needsPostgres = !process.env.DATABASE_URL;

beforeAll(async () => {
  if (needsPostgres) return;
  const dir = mkdtempSync(join(tmpdir(), 'kg-modules-'));
  const hook = join(dir, 'hook.mjs');
  const list = join(dir, 'modules.txt');
  writeFileSync(hook, HOOK);
  writeFileSync(list, '');
  db = await openTestDb();
  const url = new URL(process.env.DATABASE_URL!);
  url.searchParams.set('options', `-c search_path=${db.schema}`);
  const admin = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(await freePort()),
    ADMIN_PORT: String(admin),
    BACKEND_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    DATABASE_URL: url.toString(),
    GATEWAY_SECRET: 'x'.repeat(32),
    UPSTREAM_URL: 'http://127.0.0.1:9',
    MODULES_FILE: list,
  };
  delete env.REDIS_URL;
  delete env.SEED_FILE;
  delete env.ADMIN_API_PORT;
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_')) delete env[k];
  child = spawn(process.execPath, ['--import', 'tsx', '--import', hook, join(ROOT, 'src/cli.ts'), 'gateway'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  await untilReady(`http://127.0.0.1:${admin}/readyz`, child, () => out);
  loaded = [
    ...new Set(
      readFileSync(list, 'utf8')
        .split('\n')
        .filter((u) => u.startsWith('file://'))
        .map((u) =>
          fileURLToPath(u.replace(/\?.*$/, ''))
            .replace(/^.*?\/node_modules\//, 'node_modules/')
            .replace(ROOT + '/', ''),
        ),
    ),
  ];
}, 90_000);

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
  await db?.drop();
});

const own = (prefix: string) => loaded.filter((p) => p.startsWith(prefix));

describe.skipIf(needsPostgres)('the gateway process (keygate gateway, tracing off, no admin API, no seed)', () => {
  it('loads the gateway, and sees every kind of module (the hook works)', () => {
    expect(loaded).toContain('src/gateway/server.ts');
    expect(loaded).toContain('src/access/cache.ts');
    expect(loaded).toContain('node_modules/undici/lib/dispatcher/pool.js'); // an ES import of CommonJS
    expect(loaded).toContain('node_modules/undici/lib/core/util.js'); // required by CommonJS
    expect(loaded).toContain('node_modules/pg/lib/index.js');
  });

  it('does not load the admin API (but the traffic counts), the console, the backend, the load test or the OpenAPI tools', () => {
    expect(own('src/admin-api/')).toEqual(['src/admin-api/traffic.ts']);
    expect(own('src/console/')).toEqual([]);
    expect(own('src/backend/')).toEqual([]);
    expect(own('src/loadtest/')).toEqual([]);
    expect(own('src/openapi/')).toEqual([]);
    expect(own('src/access/service/')).toEqual([]);
  });

  it('does not load the OpenTelemetry SDK, JOSE (the verifier) or undici beyond its Pool', () => {
    expect(own('src/ops/tracing-otel.ts')).toEqual([]);
    expect(own('node_modules/@opentelemetry/sdk-trace-base/')).toEqual([]);
    expect(own('node_modules/@opentelemetry/exporter-trace-otlp-http/')).toEqual([]);
    expect(own('src/verifier/')).toEqual(['src/verifier/digest.ts']);
    expect(own('node_modules/jose/')).toEqual([]);
    expect(own('node_modules/undici/index.js')).toEqual([]);
    expect(own('node_modules/undici/lib/web/')).toEqual([]);
    // 23 files with undici 6.29.1; its index loads 95.
    expect(own('node_modules/undici/').length).toBeLessThan(40);
    expect(own('node_modules/uplot/')).toEqual([]);
    expect(own('node_modules/preact/')).toEqual([]);
    expect(own('node_modules/@electric-sql/pglite/')).toEqual([]); // DATABASE_URL is PostgreSQL
  });
});

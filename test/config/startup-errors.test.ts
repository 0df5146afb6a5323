// Start-up errors as an operator meets them: the real program in a child process stops with one line
// that names the setting (or the file's field), exit code 2, as the README promises, in our words:
// no zod message, no errno text. Each kind of error keeps at least one real child process; the other
// cases of a kind whose message comes from one function before anything opens (a setting, a data
// file) call that function in process, as src/cli.ts does, and check the line its catch would print.
// The child processes are independent (ephemeral ports, databases of their own) but run one after another:
// each test's timeout runs from its start, and children started together share two busy cores, so under
// load every one of them timed out at once.
import { execFile } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';
import { ConfigError } from '../../src/config/errors.js';
import { readJson } from '../../src/config/plans.js';
import { loadRoutes } from '../../src/config/routes.js';
import { parseSeed } from '../../src/backend/seed.js';
import { freePort } from '../helpers/redis-server.js';
import { openTestDb, pgliteDataDir } from '../helpers/db.js';
import { listenLocal } from '../helpers/listen.js';
import { cliArgs } from '../helpers/cli-program.js';

const RAW_WORDING =
  /Invalid input|Invalid option|Too (big|small)|expected .* received|EADDRINUSE|EADDRNOTAVAIL|ECONNREFUSED|ENOTFOUND|ENOENT|getaddrinfo|errno|at position|\bat .*\.(js|ts):\d+/;

interface Run {
  code: number;
  stderr: string;
}

/** The settings every run starts from: PGlite in memory, ephemeral ports. */
const BASE_SETTINGS = {
  DATA_DIR: 'memory://',
  HOST: '127.0.0.1',
  PORT: '0',
  ADMIN_PORT: '0',
  BACKEND_PORT: '0',
  LOG_LEVEL: 'warn',
};

/** `keygate start` (or another mode) with only the given settings: PGlite in memory, ephemeral ports. */
async function start(settings: Record<string, string>, mode = 'start'): Promise<Run> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...BASE_SETTINGS, ...settings };
  const argv = [...(await cliArgs()), mode];
  return new Promise((resolve) => {
    const child = execFile(process.execPath, argv, { env, timeout: 60_000 }, (err, _stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stderr }),
    );
    child.stdin?.end();
  });
}

/**
 * The start's first steps in process, as `keygate start` runs them (src/cli.ts: loadSettings, then the
 * data files), and what its catch prints for the error: `keygate: <message>`, exit code 2 for a
 * ConfigError, 1 otherwise. The child-process cases of the same kind prove that wiring.
 */
function startInProcess(
  settings: Record<string, string>,
  readFiles: (s: ReturnType<typeof loadSettings>) => unknown = () => {},
): Run {
  try {
    readFiles(loadSettings({ ...BASE_SETTINGS, ...settings }, 'start'));
  } catch (err) {
    return { code: err instanceof ConfigError ? 2 : 1, stderr: `keygate: ${(err as Error).message}\n` };
  }
  return { code: 0, stderr: '' };
}

/**
 * The database of a child whose case is not about the database: with DATABASE_URL, a schema of its own
 * copied from the run's template (reached through libpq's PGOPTIONS, which pg reads too), already
 * migrated; else a copy of the run's migrated PGlite DATA_DIR. PGlite in memory would cost each child
 * its initdb and migrations, some 3 s of CPU: seven children at once took over 60 s each on two busy cores.
 */
const schemas: Awaited<ReturnType<typeof openTestDb>>[] = [];
const dataDirs: string[] = [];
async function aDatabase(): Promise<Record<string, string>> {
  if (!process.env.DATABASE_URL) {
    dataDirs.push(pgliteDataDir());
    return { DATA_DIR: dataDirs.at(-1)! };
  }
  const db = await openTestDb();
  schemas.push(db);
  return { DATABASE_URL: process.env.DATABASE_URL, PGOPTIONS: `-c search_path=${db.schema}` };
}
afterAll(async () => {
  for (const db of schemas) await db.drop();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

function expectOneLine(r: Run, line: RegExp) {
  expect(r.code, r.stderr).toBe(2);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(line);
  expect(lines[0]).not.toMatch(RAW_WORDING);
}

const dir = mkdtempSync(join(tmpdir(), 'kg-startup-'));
function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('a listener that cannot open names its setting', () => {
  let taken: net.Server;
  let port = 0;
  beforeAll(async () => {
    taken = net.createServer();
    ({ port } = await listenLocal(taken));
  });
  afterAll(() => new Promise<void>((r) => taken.close(() => r())));

  it.each(['PORT', 'ADMIN_PORT', 'BACKEND_PORT'])(
    '%s in use',
    async (setting) => {
      expectOneLine(
        await start({ ...(await aDatabase()), [setting]: String(port) }),
        new RegExp(`^keygate: setting ${setting}: 127\\.0\\.0\\.1:${port} is already in use$`),
      );
    },
    60_000,
  );

  it('a HOST that is no address and no known host name', async () => {
    expectOneLine(
      await start({ ...(await aDatabase()), HOST: 'no-such-host.invalid' }),
      /^keygate: setting HOST: "no-such-host\.invalid" is not an address or a known host name$/,
    );
  }, 60_000);

  it('a HOST address this machine does not have', async () => {
    expectOneLine(
      await start({ ...(await aDatabase()), HOST: '192.0.2.1' }),
      /^keygate: setting HOST: 192\.0\.2\.1 is not an address of this machine$/,
    );
  }, 60_000);
});

describe('a dependency that cannot be reached names its setting', () => {
  it('DATABASE_URL refused (its password never printed)', async () => {
    const port = await freePort();
    const r = await start({ DATABASE_URL: `postgres://keygate:hunter2secret@127.0.0.1:${port}/keygate` });
    expectOneLine(
      r,
      new RegExp(
        `^keygate: setting DATABASE_URL: cannot connect to 127\\.0\\.0\\.1:${port}/keygate \\(connection refused\\)$`,
      ),
    );
    expect(r.stderr).not.toContain('hunter2secret');
  }, 60_000);

  it('DATABASE_URL whose host does not resolve', async () => {
    expectOneLine(
      await start({ DATABASE_URL: 'postgres://keygate@db.invalid:5432/keygate' }),
      /^keygate: setting DATABASE_URL: cannot connect to db\.invalid:5432\/keygate \((host not found|host name lookup failed)\)$/,
    );
  }, 60_000);

  it('REDIS_URL whose host does not resolve (a Redis that is merely down starts degraded instead)', async () => {
    expectOneLine(
      await start({ ...(await aDatabase()), REDIS_URL: 'redis://cache.invalid:6379' }),
      /^keygate: setting REDIS_URL: cannot connect to cache\.invalid:6379 \((host not found|host name lookup failed)\)$/,
    );
  }, 60_000);
});

describe('an invalid setting or data file names the setting or the field', () => {
  const plans = JSON.parse(readFileSync('config/plans.json', 'utf8'));
  const routes = JSON.parse(readFileSync('config/routes.json', 'utf8'));

  const settingCases: [Record<string, string>, RegExp][] = [
    [
      { TRUST_PROXY: '10.0.0.0/8,10.1.0.0/33' },
      /^keygate: setting TRUST_PROXY: "10\.1\.0\.0\/33" has an invalid prefix length$/,
    ],
    [{ TRUST_PROXY: 'proxy.internal' }, /^keygate: setting TRUST_PROXY: "proxy\.internal" is not an address or CIDR$/],
    [{ PORT: 'eighty' }, /^keygate: setting PORT: must be a number$/],
    [{ ADMIN_PORT: '70000' }, /^keygate: setting ADMIN_PORT: must be at most 65535$/],
    [
      { LOG_LEVEL: 'loud' },
      /^keygate: setting LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent$/,
    ],
    [
      { CONFIG_FILE: '/nonexistent/keygate.json' },
      /^keygate: setting CONFIG_FILE: cannot read \/nonexistent\/keygate\.json \(no such file or directory\)$/,
    ],
  ];

  it.each(settingCases)('%o (in process)', (settings, line) => {
    expectOneLine(startInProcess(settings), line);
  });

  // The real program for two of them: a schema error and a file loadSettings cannot read.
  it.each(settingCases.filter(([s]) => s.PORT || s.CONFIG_FILE))(
    '%o (the program)',
    async (settings, line) => {
      expectOneLine(await start(settings), line);
    },
    60_000,
  );

  it('an unknown field in the seed file', async () => {
    const seed = file('seed.json', { organizations: [{ id: 1, name: 'Acme', plan: 'growth', colour: 'red' }] });
    expectOneLine(
      await start({ SEED_FILE: seed }),
      new RegExp(`^keygate: ${seed} organizations\\.0\\.colour: unknown field$`),
    );
  }, 60_000);

  it('a seed row the database refuses names its field, not the constraint', async () => {
    const seed = file('orphan.json', { users: [{ id: 10, organizationId: 9, email: 'a@b.test', orgRole: 'OWNER' }] });
    expectOneLine(
      await start({ ...(await aDatabase()), SEED_FILE: seed }),
      /^keygate: seed users\.0\.organizationId: 9 is not in organizations$/,
    );
  }, 60_000);

  // As src/cli.ts reads SEED_FILE before it opens anything.
  const readSeed = (s: ReturnType<typeof loadSettings>) => parseSeed(readJson(s.SEED_FILE!, 'SEED_FILE'), s.SEED_FILE);

  it('a seed file that is not JSON: the place, never the text around it (a seed holds secrets)', () => {
    const seed = file('broken.json', '{"apiKeys": [{"secret": svc_ws_SuperSecret000000000000000000000001}]}');
    const r = startInProcess({ SEED_FILE: seed }, readSeed);
    expectOneLine(r, new RegExp(`^keygate: setting SEED_FILE: ${seed}: invalid JSON`));
    expect(r.stderr).not.toContain('SuperSecret');
  });

  it('a missing seed file', () => {
    expectOneLine(
      startInProcess({ SEED_FILE: join(dir, 'absent.json') }, readSeed),
      /^keygate: setting SEED_FILE: .*absent\.json: cannot read \(no such file or directory\)$/,
    );
  });

  it('an unknown field in the plans file', async () => {
    const p = structuredClone(plans);
    p.growth.colour = 'red';
    expectOneLine(
      await start({ ...(await aDatabase()), PLANS_FILE: file('plans.json', p) }),
      /^keygate: .*plans\.json growth\.colour: unknown field$/,
    );
  }, 60_000);

  // The plans file's case above runs the program; the routes file is read the same way, by startApp.
  it('an unknown field in the routes file', () => {
    const r = structuredClone(routes);
    r.v2[0].owner = 'nobody';
    expectOneLine(
      startInProcess({ ROUTES_FILE: file('routes.json', r) }, (s) => loadRoutes(s.ROUTES_FILE)),
      /^keygate: .*routes\.json v2\.0\.owner: unknown field$/,
    );
  });
});

describe('the wording of schema errors (no zod text)', () => {
  it.each([
    [{ PORT: '1.5' }, 'setting PORT: must be an integer'],
    [{ HOST: '' }, null], // empty means unset: the default applies
    [{ DATABASE_URL: 'not a url' }, 'setting DATABASE_URL: must be a URL'],
    [{ GATEWAY_SECRET: 'short' }, 'setting GATEWAY_SECRET: must be at least 16 characters'],
  ])('%o', (env, message) => {
    if (message === null) expect(() => loadSettings(env as NodeJS.ProcessEnv)).not.toThrow();
    else expect(() => loadSettings(env as NodeJS.ProcessEnv)).toThrowError(new RegExp(`^${message}$`));
  });

  it.each([
    [{ users: 3 }, 'seed users: must be a list'],
    [{ organizations: [{ id: 1, name: 'A' }] }, 'seed organizations.0.plan: is required'],
    [
      { users: [{ id: 1, organizationId: 1, email: 'nope', orgRole: 'OWNER' }] },
      'seed users.0.email: must be an email address',
    ],
    // Plans are data (PLANS_FILE): any well-formed name is accepted, a malformed one is refused.
    [{ organizations: [{ id: 1, name: 'A', plan: 'Gold Plan!' }] }, 'seed organizations.0.plan: must be a plan name'],
    [[], 'seed (root): must be an object'],
  ])('seed %j', (seed, message) => {
    expect(() => parseSeed(seed)).toThrowError(message);
  });
});

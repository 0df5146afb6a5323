// Hostile input to the admin API of the real program, and to the CLI where it takes the same: ids and
// cursors past PostgreSQL's integer, NUL characters and lone surrogates (which PostgreSQL refuses in text
// and jsonb), addresses that are not addresses. Each is answered 400 (or 404 for a path naming nothing)
// in the API's error shape, never a 500, and leaves no error-level line in the program's log (a read
// token must not be able to flood it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { startProgram, type Program } from '../helpers/program.js';
import { freePort } from '../helpers/redis-server.js';
import { runCli } from '../helpers/cli-program.js';
import { ROUTES } from '../../src/admin-api/routes.js';

let program: Program;
let base: string;
let token: string;
let keyId: number;

beforeAll(async () => {
  const [port, admin, backend, api] = [await freePort(), await freePort(), await freePort(), await freePort()];
  program = await startProgram({
    PORT: String(port),
    ADMIN_PORT: String(admin),
    BACKEND_PORT: String(backend),
    ADMIN_API_PORT: String(api),
    HOST: '127.0.0.1',
    DATA_DIR: 'memory://',
    LOG_LEVEL: 'info',
  });
  base = `http://127.0.0.1:${api}`;
  token = /admin token \(write, this start only\): (\S+)/.exec(program.output())![1];
  const keys = await (await call('GET', '/api/keys?limit=1')).json();
  keyId = keys.items[0].id;
}, 120_000);
afterAll(() => {
  const c: ChildProcess | undefined = program?.child;
  if (c && c.exitCode === null) c.kill('SIGKILL');
});

/** One request with a raw JSON text as its body (lone surrogates survive only as \\u escapes). */
function call(method: string, path: string, body?: string): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(base + path, { method, headers, body });
}

const BIG = ['2147483648', '9999999999'];
const NUL = '"a\\u0000b"';
const LONE = '"a\\ud800b"';

/** Every route with an {id}, its id past the integer: 404, whatever the body. */
const pathCases = ROUTES.filter((r) => r.path.includes('{id}')).flatMap((r) =>
  BIG.map((n) => [r.method, r.path.replace('{id}', n), r.method === 'GET' ? undefined : '{}', 404] as const),
);
const cursorCases = ROUTES.filter((r) => r.query?.some((q) => q.name === 'cursor')).flatMap((r) =>
  [...BIG, '999999999999'].map((n) => ['GET', `${r.path.replace('{id}', '1')}?cursor=${n}`, undefined, 400] as const),
);
const key = () => `/api/keys/${keyId}`;
const bodyCases = (): (readonly [string, string, string, number])[] => [
  ['POST', '/api/keys', '{"type":"workspace","workspaceId":2147483648,"name":"x"}', 400],
  ['POST', '/api/keys', '{"type":"workspace","workspaceId":100,"name":"x","createdBy":2147483648}', 400],
  ['POST', '/api/keys', '{"type":"personal","userId":9999999999,"name":"x"}', 400],
  ['POST', '/api/keys', '{"type":"partner","organizationId":2147483648,"name":"x"}', 400],
  ['POST', '/api/keys', `{"type":"workspace","workspaceId":100,"name":${NUL}}`, 400],
  ['POST', '/api/keys', `{"type":"workspace","workspaceId":100,"name":${LONE}}`, 400],
  ['POST', '/api/keys', `{"type":"workspace","workspaceId":100,"name":"x","metadata":{"k":${NUL}}}`, 400],
  ['POST', '/api/keys', `{"type":"workspace","workspaceId":100,"name":"x","metadata":{"k":${LONE}}}`, 400],
  ['POST', '/api/keys', `{"type":"workspace","workspaceId":100,"name":"x","metadata":{${NUL}:1}}`, 400],
  ['POST', '/api/keys', `{"type":"workspace","workspaceId":100,"name":"x","metadata":{"k":[{"d":${LONE}}]}}`, 400],
  ['PATCH', key(), `{"name":${NUL}}`, 400],
  ['PATCH', key(), `{"name":${LONE}}`, 400],
  ['PATCH', key(), `{"metadata":{"k":${NUL}}}`, 400],
  ['PATCH', key(), `{"metadata":{${LONE}:"v"}}`, 400],
  ['POST', '/api/admin-tokens', `{"name":${NUL},"role":"read"}`, 400],
  ['POST', '/api/admin-tokens', `{"name":${LONE},"role":"read"}`, 400],
  ['GET', `${key()}/usage?ip=::::::::`, '', 400],
  ['GET', `${key()}/usage?ip=999.1.1.1`, '', 400],
  ['GET', `${key()}/usage?ip=1.2.3`, '', 400],
  ['GET', `${key()}/usage?ip=::ffff:999.1.1.1`, '', 400],
  ['GET', `${key()}/usage?ip=1:2:3:4:5:6:7:8:9`, '', 400],
  ['GET', '/api/keys?workspace=2147483648', '', 400],
  ['GET', '/api/audit?organization=9999999999', '', 400],
];

describe('the admin API', () => {
  it.each([...pathCases, ...cursorCases])('%s %s: %s -> %i', async (method, path, body, status) => {
    const r = await call(method, path, body);
    const text = await r.text();
    expect(r.status, text).toBe(status);
    expect(Object.keys(JSON.parse(text))).toEqual(['error']);
    expect(JSON.parse(text).error.code).toBe(status === 404 ? 'not_found' : 'invalid_request');
  });

  it('refuses every hostile body and query with 400 in its error shape', async () => {
    for (const [method, path, body, status] of bodyCases()) {
      const r = await call(method, path, body || undefined);
      const text = await r.text();
      expect(r.status, `${method} ${path} ${body}: ${text}`).toBe(status);
      expect(JSON.parse(text).error.code, `${method} ${path} ${body}`).toBe('invalid_request');
    }
    // The valid neighbours still pass: the checks refuse only what they name.
    expect((await call('GET', `${key()}/usage?ip=::ffff:10.1.2.3`)).status).toBe(200);
    expect((await call('GET', `${key()}/usage?ip=2001:db8::1`)).status).toBe(200);
    expect((await call('PATCH', key(), '{"metadata":{"k":"caf\\u00e9 \\ud83d\\ude00"}}')).status).toBe(200);
  });

  it('leaves no error-level line in the log', () => {
    const errors = program
      .output()
      .split('\n')
      .filter((l) => /"level":(50|60)/.test(l));
    expect(errors).toEqual([]);
  });
});

describe('the CLI', () => {
  // No database can be opened here: the arguments must be refused before one is.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: '/proc/keygate-never' };
  it.each([
    [['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'x', '--metadata', '{"k":"a\\u0000"}']],
    [['keys', 'create', '--type', 'workspace', '--workspace', '100', '--name', 'x', '--metadata', '{"k":"\\udc00"}']],
    [['keys', 'update', '1000', '--metadata', '{"\\u0000":1}']],
  ])('%j: one line naming the option, exit code 2', async (args) => {
    const r = await runCli(args, env);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^keygate: keys (create|update): --(metadata|name) .*\n$/);
  });
  it.each([[['keys', 'revoke', '2147483648']], [['keys', 'update', '9999999999', '--name', 'x']]])(
    '%j: the id is refused, exit code 2',
    async (args) => {
      const r = await runCli(args, env);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/must be a positive integer id/);
    },
  );
});

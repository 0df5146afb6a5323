// Logs you can follow: the request id on every backend line about a request, secrets redacted even
// when a whole object is logged by mistake, the access log's allow-list, and pino-pretty only for a
// terminal (docs/decisions.md section 8: pino lines, no secret in any of them).
import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, fetchRes, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import {
  accessLogFields,
  accessLogWriter,
  createLogger,
  flushAccessLines,
  logAccess,
  logFormatFor,
  REDACT_PATHS,
  type AccessLogSource,
} from '../../src/ops/logger.js';
import { loadSettings } from '../../src/config/settings.js';

type Line = Record<string, unknown> & { msg?: string; requestId?: string; level?: number };

/** A logger whose JSON lines land in an array, plus the raw text (to search for secrets). */
function capture(level = 'debug') {
  const lines: Line[] = [];
  let raw = '';
  const sink = new Writable({
    write(chunk, _enc, cb) {
      raw += chunk;
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: createLogger(level, sink), lines, raw: () => raw };
}

/** The lines logged while `fn` ran (a turn of the event loop included, for lines written on 'close'). */
async function linesDuring<T>(lines: Line[], fn: () => Promise<T>): Promise<{ result: T; during: Line[] }> {
  // Access lines are written in batches (src/ops/logger.ts): hand over those of earlier requests first.
  flushAccessLines();
  const before = lines.length;
  const result = await fn();
  await new Promise((r) => setImmediate(r));
  flushAccessLines();
  return { result, during: lines.slice(before) };
}

describe('backend log lines carry the request id', () => {
  const out = capture('debug');
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ clock: new FakeClock(), log: out.log });
  });
  afterAll(async () => s?.close());

  it('through the gateway: every line logged for the request holds the X-Request-Id the client sent', async () => {
    const { result: r, during } = await linesDuring(out.lines, () =>
      s.request('POST', '/v2/workspaces/100/members', {
        key: K.wsAdmin,
        ip: '10.9.0.1',
        headers: { 'x-request-id': 'logs-invite-1' },
        body: { email: 'follow.me@acme.test', role: 'VIEWER' },
      }),
    );
    expect(r.status).toBe(201);
    expect(r.headers.get('x-request-id')).toBe('logs-invite-1');
    const invited = during.find((l) => l.msg === 'member invited');
    expect(invited, 'the handler logged through its context').toBeDefined();
    expect(invited!.c).toBe('backend');
    for (const l of during) expect(l.requestId, JSON.stringify(l)).toBe('logs-invite-1');
  });

  it('straight to the backend without an id: the generated one is echoed and on the line', async () => {
    const { result: r, during } = await linesDuring(out.lines, () =>
      fetchRes(s.backendUrl + '/api-keys', {
        method: 'POST',
        headers: { cookie: `session=${K.session}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'follow', type: 'personal', scopes: [] }),
      }),
    );
    expect(r.status).toBe(201);
    const id = r.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const created = during.find((l) => l.msg === 'api key created');
    expect(created).toBeDefined();
    for (const l of during) expect(l.requestId, JSON.stringify(l)).toBe(id);
    // The secret shown once in the response never reaches a line, nor the session token.
    expect(r.body.data.secret).toMatch(/^svc_pk_/);
    expect(out.raw()).not.toContain(r.body.data.secret);
    expect(out.raw()).not.toContain(K.session);
  });

  it('an internal route handed down ctx.svc: its line carries the id too', async () => {
    const { result: r, during } = await linesDuring(out.lines, () =>
      fetchRes(s.backendUrl + '/internal/organizations/2', {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${s.internalToken}`,
          'content-type': 'application/json',
          'x-request-id': 'logs-internal-7',
        },
        body: JSON.stringify({ warmupCap: 7 }),
      }),
    );
    expect(r.status).toBe(200);
    expect(during.map((l) => l.msg)).toContain('organization updated');
    for (const l of during) expect(l.requestId, JSON.stringify(l)).toBe('logs-internal-7');
    expect(out.raw()).not.toContain(s.internalToken);
  });
});

describe('redaction', () => {
  const secrets = {
    bearer: 'Bearer svc_ws_RedactMe0000000000000000000000000001',
    apiKey: 'svc_v1_RedactMe0000000000000000000000000002',
    cookie: 'session=sess_RedactMe000000000000000000003',
    setCookie: 'session=sess_RedactMe000000000000000000004; HttpOnly',
    signature: 'f00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeed',
    password: 'hunter2-RedactMe',
    token: 'tok_RedactMe_0005',
    gatewaySecret: 'gw_RedactMe_0006',
  };

  it('censors the secret fields at the top, in headers, request and settings objects, and in child bindings', () => {
    const out = capture('info');
    const headers = {
      authorization: secrets.bearer,
      'x-api-key': secrets.apiKey,
      cookie: secrets.cookie,
      'set-cookie': [secrets.setCookie],
      'x-gateway-signature': secrets.signature,
      'user-agent': 'curl/8',
    };
    out.log.info({ headers }, 'headers logged by mistake');
    out.log.info({ req: { method: 'GET', headers } }, 'a request logged by mistake');
    out.log.info(
      {
        password: secrets.password,
        user: { token: secrets.token, accessToken: secrets.token, refreshToken: secrets.token },
      },
      'fields',
    );
    out.log.info(
      {
        settings: {
          GATEWAY_SECRET: secrets.gatewaySecret,
          INTERNAL_TOKEN: secrets.token,
          gatewaySecret: secrets.gatewaySecret,
        },
      },
      'settings',
    );
    out.log.child({ authorization: secrets.bearer }).info('child');
    for (const v of Object.values(secrets)) expect(out.raw()).not.toContain(v.slice(-12));
    expect(out.lines[0].headers).toEqual({
      authorization: '[redacted]',
      'x-api-key': '[redacted]',
      cookie: '[redacted]',
      'set-cookie': '[redacted]',
      'x-gateway-signature': '[redacted]',
      'user-agent': 'curl/8',
    });
    expect((out.lines[1].req as { headers: Record<string, string> }).headers.authorization).toBe('[redacted]');
    expect(out.lines[2]).toMatchObject({
      password: '[redacted]',
      user: { token: '[redacted]', accessToken: '[redacted]', refreshToken: '[redacted]' },
    });
    expect(out.lines[4].authorization).toBe('[redacted]');
  });

  it('uses explicit paths only: a wildcard path would cost about a microsecond on every access line', () => {
    expect(REDACT_PATHS.filter((p) => p.includes('*'))).toEqual([]);
    for (const p of [
      'authorization',
      'req.headers.authorization',
      'headers["x-api-key"]',
      'res.headers["set-cookie"]',
      'password',
      'body.password',
      'user.token',
    ])
      expect(REDACT_PATHS, p).toContain(p);
  });

  it('the access log keeps only its allow-listed fields, drops the query string, rounds the duration', () => {
    const out = capture('info');
    // An exchange with more than the access log may hold: headers, a secret, the raw target.
    const exchange = {
      requestId: 'acc-1',
      method: 'GET',
      route: '/v2/workspaces/{workspaceId}/accounts?api_key=svc_ws_QueryLeak',
      status: 429,
      code: '150005',
      ms: 3.14159,
      organizationId: 1,
      keyId: 1000,
      headers: { authorization: secrets.bearer },
      secret: secrets.apiKey,
      target: '/v2/workspaces/100/accounts?api_key=svc_ws_QueryLeak',
      ip: '10.1.2.3',
    } satisfies AccessLogSource & Record<string, unknown>;
    expect(accessLogFields(exchange)).toEqual({
      requestId: 'acc-1',
      method: 'GET',
      route: '/v2/workspaces/{workspaceId}/accounts',
      status: 429,
      code: '150005',
      ms: 3.1,
      organizationId: 1,
      keyId: 1000,
    });
    logAccess(out.log, exchange);
    expect(out.lines).toHaveLength(1);
    expect(out.lines[0].level).toBe(30);
    expect(Object.keys(out.lines[0]).sort()).toEqual([
      'code',
      'keyId',
      'level',
      'method',
      'ms',
      'msg',
      'organizationId',
      'requestId',
      'route',
      'status',
      'svc',
      'time',
    ]);
    for (const leak of ['QueryLeak', secrets.apiKey, secrets.bearer, '10.1.2.3']) expect(out.raw()).not.toContain(leak);
    // No key resolved (steps 1 to 4): null ids, not missing fields.
    expect(
      accessLogFields({ requestId: 'acc-2', method: 'GET', route: 'unmatched', status: 401, code: '150001', ms: 0.04 }),
    ).toMatchObject({
      code: '150001',
      ms: 0,
      organizationId: null,
      keyId: null,
    });
  });
});

describe('the access line writer', () => {
  const source: AccessLogSource = {
    requestId: 'acc-w1',
    method: 'POST',
    route: '/v2/workspaces/{workspaceId}/accounts/bulk/tags?x=1',
    status: 201,
    code: null,
    ms: 12.345,
    organizationId: 7,
    keyId: 1001,
  };
  const settle = async () => {
    flushAccessLines();
    await new Promise((r) => setImmediate(r));
  };

  it('writes byte for byte the line pino writes for the same fields, apart from the time', async () => {
    const viaPino = capture('info');
    const viaWriter = capture('info');
    logAccess(viaPino.log, source);
    accessLogWriter(viaWriter.log)(source);
    await settle();
    // Every line's time: after the second pair the output holds two lines, each with its own.
    const strip = (raw: string) => raw.replace(/"time":\d+/g, '"time":0');
    expect(viaWriter.lines).toHaveLength(1);
    expect(strip(viaWriter.raw())).toBe(strip(viaPino.raw()));
    // A refusal without a key: a code, null ids.
    const refusal = { ...source, status: 401, code: '150001', organizationId: undefined, keyId: null };
    logAccess(viaPino.log, refusal);
    accessLogWriter(viaWriter.log)(refusal);
    await settle();
    expect(strip(viaWriter.raw())).toBe(strip(viaPino.raw()));
  });

  it('writes every duration, route and method as pino does, line after line', async () => {
    const viaPino = capture('info');
    const viaWriter = capture('info');
    const write = accessLogWriter(viaWriter.log);
    const durations = [0, -0, 0.04, 0.05, 0.95, 1, 9.96, 12.345, 99.99, 1234.56, 1e7 + 0.3, 1e16 + 0.5];
    for (let i = 0; i < 200; i++) durations.push(Math.random() * 10 ** (i % 7));
    const routes = ['/v2/workspaces/{workspaceId}/tags', 'unmatched', 'unmatched "q"', '/v2/x?y=1'];
    const methods = ['GET', 'GET', 'POST', 'DELETE'];
    durations.forEach((ms, i) => {
      const line = { ...source, ms, route: routes[i % 4], method: methods[(i >> 2) % 4] };
      logAccess(viaPino.log, line);
      write(line);
    });
    await settle();
    const strip = (raw: string) => raw.replace(/"time":\d+/g, '"time":0');
    expect(viaWriter.lines).toHaveLength(durations.length);
    expect(strip(viaWriter.raw())).toBe(strip(viaPino.raw()));
  });

  it('keeps the child logger bindings and escapes what JSON must escape', async () => {
    const out = capture('info');
    const write = accessLogWriter(out.log.child({ worker: 2 }));
    write({ ...source, route: 'unmatched "quoted" \\ \u2028 \ud800' });
    await settle();
    expect(out.lines).toHaveLength(1);
    expect(out.lines[0]).toMatchObject({
      svc: 'keygate',
      worker: 2,
      route: 'unmatched "quoted" \\ \u2028 \ud800',
      msg: 'request',
    });
  });

  it('holds the lines back and writes them as one write, in order, and nothing below its level', async () => {
    const out = capture('info');
    const write = accessLogWriter(out.log);
    for (let i = 0; i < 5; i++) write({ ...source, requestId: `acc-b${i}` });
    expect(out.lines).toHaveLength(0);
    await settle();
    expect(out.lines.map((l) => l.requestId)).toEqual(['acc-b0', 'acc-b1', 'acc-b2', 'acc-b3', 'acc-b4']);
    const quiet = capture('warn');
    accessLogWriter(quiet.log)(source);
    await settle();
    expect(quiet.raw()).toBe('');
  });

  it('a process that exits in the turn it answered still writes the line', async () => {
    const LOGGER = fileURLToPath(new URL('../../src/ops/logger.ts', import.meta.url));
    const ROOT = fileURLToPath(new URL('../../', import.meta.url));
    const program = `const { createLogger, accessLogWriter } = await import(${JSON.stringify(LOGGER)}); accessLogWriter(createLogger('info'))({ requestId: 'exit-1', method: 'GET', route: 'unmatched', status: 404, code: 'not_found', ms: 1, organizationId: null, keyId: null }); process.exit(0);`;
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', program],
        { cwd: ROOT },
        (err, out) => (err ? reject(err) : resolve(out)),
      ),
    );
    expect(
      stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).requestId),
    ).toEqual(['exit-1']);
  });
});

describe('ACCESS_LOG setting', () => {
  it('is on by default, takes off, and refuses anything else naming the setting', () => {
    expect(loadSettings({}).ACCESS_LOG).toBe('on');
    expect(loadSettings({ ACCESS_LOG: 'off' }).ACCESS_LOG).toBe('off');
    expect(() => loadSettings({ ACCESS_LOG: 'maybe' })).toThrow(/ACCESS_LOG/);
  });
});

describe('terminal or pipe', () => {
  const ROOT = fileURLToPath(new URL('../../', import.meta.url));
  const LOGGER = fileURLToPath(new URL('../../src/ops/logger.ts', import.meta.url));
  // A child that logs one line through createLogger() with no destination: stdout decides the format.
  const program = `const { createLogger } = await import(${JSON.stringify(LOGGER)}); createLogger('info').info({ requestId: 'tty-1', authorization: 'Bearer svc_ws_TtyLeak' }, 'hello from the child');`;
  const nodeArgs = ['--import', 'tsx', '--input-type=module', '-e', program];
  const run = (file: string, args: string[]) =>
    new Promise<string>((resolve, reject) => {
      execFile(file, args, { cwd: ROOT, timeout: 30_000, env: { ...process.env, NO_COLOR: '' } }, (err, stdout) =>
        err ? reject(err) : resolve(stdout),
      );
    });

  it('selects pino-pretty for a TTY and JSON otherwise', () => {
    expect(logFormatFor({ isTTY: true })).toBe('pretty');
    expect(logFormatFor({ isTTY: false })).toBe('json');
    expect(logFormatFor({})).toBe('json');
  });

  it('a child writing to a pipe prints one JSON line', async () => {
    const stdout = await run(process.execPath, nodeArgs);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({
      level: 30,
      requestId: 'tty-1',
      authorization: '[redacted]',
      msg: 'hello from the child',
    });
  });

  // util-linux `script` gives the child a pseudo-terminal; without it only the selection function is tested.
  it.skipIf(!existsSync('/usr/bin/script'))(
    'a child writing to a pseudo-terminal prints pino-pretty text, redacted too',
    async () => {
      const quoted = [process.execPath, ...nodeArgs].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
      const stdout = await run('/usr/bin/script', ['-qec', quoted, '/dev/null']);
      const plain = stdout.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r/g, '');
      expect(plain).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hello from the child$/m);
      expect(plain).toMatch(/^\s+requestId: "tty-1"$/m);
      expect(plain).toContain('[redacted]');
      expect(plain).not.toContain('TtyLeak');
      expect(() => JSON.parse(plain.trim().split('\n')[0])).toThrow();
    },
  );
});

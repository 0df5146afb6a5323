// The admin API's answers as bytes: status, every header in the order written and the body, for each
// error path and a few successes, kept in a snapshot. Only what changes per request is masked (the
// request id, the date); a large body is kept as its length and digest. An answer that changes shape
// in any byte fails here, whatever serves it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { createHash } from 'node:crypto';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { adminToken } from '../helpers/admin-api.js';
import { ADMIN_AUTH_FAILURES } from '../../src/admin-api/auth.js';

let stack: Stack;
let port: number;
const clock = new FakeClock();
const tokens = { read: '', write: '' };

beforeAll(async () => {
  clock.setSecond(10);
  stack = await startStack({ clock, env: { ADMIN_API_PORT: '0' } });
  port = Number(new URL(stack.app.adminApiUrl!).port);
  tokens.read = (await adminToken(stack, 'read', 'reader', clock)).token;
  tokens.write = (await adminToken(stack, 'write', 'writer', clock)).token;
});
afterAll(() => stack?.close());

interface Ask {
  method: string;
  path: string;
  token?: 'read' | 'write' | string;
  ip?: string;
  headers?: Record<string, string | number>;
  /** Written as given; an array is written in chunks (Transfer-Encoding: chunked). */
  body?: string | string[];
}

/** One request on its own connection; the answer as recorded (request id and date masked). */
function ask(a: Ask): Promise<string> {
  return new Promise((done, fail) => {
    const headers: Record<string, string | number> = { 'x-forwarded-for': a.ip ?? '198.51.100.1', ...a.headers };
    if (a.token) headers.authorization = `Bearer ${a.token in tokens ? tokens[a.token as 'read'] : a.token}`;
    if (typeof a.body === 'string') headers['content-length'] ??= Buffer.byteLength(a.body);
    const req = http.request({ port, host: '127.0.0.1', method: a.method, path: a.path, headers, agent: false });
    req.on('error', fail);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const id = String(res.headers['x-request-id']);
        const raw = Buffer.concat(chunks);
        let body = raw.toString('utf8').replaceAll(id, '<request-id>');
        if (raw.length > 2000) body = `<${raw.length} bytes, sha256 ${createHash('sha256').update(raw).digest('hex')}>`;
        const head: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const [name, value] = [res.rawHeaders[i], res.rawHeaders[i + 1]];
          head.push(`${name}: ${/^date$/i.test(name) ? '<date>' : value.replaceAll(id, '<request-id>')}`);
        }
        done(`${a.method} ${a.path}\n${res.statusCode} ${res.statusMessage}\n${head.join('\n')}\n\n${body}`);
      });
    });
    if (Array.isArray(a.body)) for (const part of a.body) req.write(part);
    else if (a.body !== undefined) req.write(a.body);
    req.end();
  });
}

const json = { 'content-type': 'application/json' };

describe('the admin API answers as recorded', () => {
  it.each([
    ['the document', { method: 'GET', path: '/api' }],
    ['the document, HEAD', { method: 'HEAD', path: '/api/openapi.json' }],
    ['the document, trailing slash', { method: 'GET', path: '/api/' }],
    ['the document, POST', { method: 'POST', path: '/api' }],
    ['no token', { method: 'GET', path: '/api/me' }],
    ['a malformed authorization', { method: 'GET', path: '/api/me', headers: { authorization: 'Basic abc' } }],
    ['an unknown token', { method: 'GET', path: '/api/me', token: `kga_${'x'.repeat(40)}` }],
    ['a read token', { method: 'GET', path: '/api/me', token: 'read' }],
    ['HEAD of a GET route', { method: 'HEAD', path: '/api/me', token: 'read' }],
    ['a query string', { method: 'GET', path: '/api/me?x=1', token: 'read' }],
    ['an unknown path, no token', { method: 'GET', path: '/api/nope' }],
    ['an unknown path', { method: 'GET', path: '/api/nope', token: 'read' }],
    ['a wrong method', { method: 'DELETE', path: '/api/keys/1', token: 'write' }],
    ['a wrong method on a collection', { method: 'PUT', path: '/api/admin-tokens', token: 'write' }],
    ['HEAD of a POST route', { method: 'HEAD', path: '/api/keys/1/revoke', token: 'read' }],
    ['a read token on a write', { method: 'POST', path: '/api/keys/1/revoke', token: 'read' }],
    ['an id past the integer', { method: 'GET', path: '/api/keys/2147483648', token: 'read' }],
    ['an id of eleven digits', { method: 'GET', path: '/api/keys/12345678901', token: 'read' }],
    ['an id with a leading zero', { method: 'GET', path: '/api/keys/01', token: 'read' }],
    ['a trailing slash', { method: 'GET', path: '/api/keys/', token: 'read' }],
    ['a doubled slash', { method: 'GET', path: '/api//keys', token: 'read' }],
    ['an encoded digit', { method: 'GET', path: '/api/keys/%31', token: 'read' }],
    ['a semicolon', { method: 'GET', path: '/api/keys;x', token: 'read' }],
    ['another case', { method: 'GET', path: '/api/Keys', token: 'read' }],
    ['dot segments', { method: 'GET', path: '/api/x/../me', token: 'read' }],
    ['an id past the integer, wrong method', { method: 'PUT', path: '/api/keys/2147483648', token: 'write' }],
    [
      'an id past the integer, read token on a write',
      { method: 'POST', path: '/api/keys/2147483648/revoke', token: 'read' },
    ],
    ['an id past the integer, a write', { method: 'POST', path: '/api/keys/2147483648/revoke', token: 'write' }],
    [
      'a declared body over the limit',
      { method: 'POST', path: '/api/keys', token: 'write', headers: json, body: `"${'a'.repeat(65 * 1024)}"` },
    ],
    [
      'a chunked body over the limit',
      { method: 'POST', path: '/api/keys', token: 'write', headers: json, body: Array(70).fill('a'.repeat(1024)) },
    ],
    [
      'a text body',
      { method: 'POST', path: '/api/keys', token: 'write', headers: { 'content-type': 'text/plain' }, body: '{}' },
    ],
    [
      'an empty text body',
      {
        method: 'POST',
        path: '/api/keys/1/expire',
        token: 'write',
        headers: { 'content-type': 'text/plain' },
        body: '',
      },
    ],
    ['invalid JSON', { method: 'POST', path: '/api/keys', token: 'write', headers: json, body: '{' }],
    [
      'a body the schema refuses',
      { method: 'POST', path: '/api/keys', token: 'write', headers: json, body: '{"type":"workspace","name":"x"}' },
    ],
    [
      'an unknown field',
      { method: 'POST', path: '/api/keys/1/rotate', token: 'write', headers: json, body: '{"grace":1}' },
    ],
    [
      'a negative grace',
      { method: 'POST', path: '/api/keys/1/rotate', token: 'write', headers: json, body: '{"graceSeconds":-1}' },
    ],
    [
      'a grace too long',
      { method: 'POST', path: '/api/keys/1/rotate', token: 'write', headers: json, body: '{"graceSeconds":2592001}' },
    ],
    [
      'a fractional grace',
      { method: 'POST', path: '/api/keys/1/rotate', token: 'write', headers: json, body: '{"graceSeconds":1.5}' },
    ],
    [
      'an expiry that is no time',
      { method: 'POST', path: '/api/keys/1/expire', token: 'write', headers: json, body: '{"at":"soon"}' },
    ],
    [
      'an expiry without a zone',
      {
        method: 'POST',
        path: '/api/keys/1/expire',
        token: 'write',
        headers: json,
        body: '{"at":"2026-01-01T00:00:00"}',
      },
    ],
    [
      'an update expiry that is no time',
      { method: 'PATCH', path: '/api/keys/1', token: 'write', headers: json, body: '{"expiresAt":"x"}' },
    ],
    ['an empty update', { method: 'PATCH', path: '/api/keys/1', token: 'write', headers: json, body: '{}' }],
    ['a body that is null', { method: 'PATCH', path: '/api/keys/1', token: 'write', headers: json, body: 'null' }],
    ['a page too large', { method: 'GET', path: '/api/keys?limit=201', token: 'read' }],
    ['a cursor not given', { method: 'GET', path: '/api/keys?cursor=12345678901', token: 'read' }],
    ['a bad filter', { method: 'GET', path: '/api/keys?status=gone', token: 'read' }],
    ['a bad id filter', { method: 'GET', path: '/api/workspaces?organization=0', token: 'read' }],
    ['a bad action', { method: 'GET', path: '/api/audit?action=KEY', token: 'read' }],
    ['nothing with that id', { method: 'GET', path: '/api/organizations/999999', token: 'read' }],
    ['an organization', { method: 'GET', path: '/api/organizations/1', token: 'read' }],
    ['a bad usage address', { method: 'GET', path: '/api/keys/1000/usage?ip=nope', token: 'read' }],
    ['the console', { method: 'GET', path: '/' }],
    ['the console, HEAD', { method: 'HEAD', path: '/' }],
    ['the console, POST', { method: 'POST', path: '/' }],
    ['no console file', { method: 'GET', path: '/nope.js' }],
    ['a target that is no path', { method: 'GET', path: 'http://[' }],
  ] as [string, Ask][])('%s', async (_name, a) => {
    expect(await ask(a)).toMatchSnapshot();
  });

  it('refuses an address past the failed attempts, with Retry-After, a valid token too', async () => {
    const ip = '192.0.2.200';
    const answers: string[] = [];
    for (let i = 0; i < ADMIN_AUTH_FAILURES; i++)
      answers.push(await ask({ method: 'GET', path: '/api/me', ip, token: `kga_${String(i).padStart(40, 'z')}` }));
    answers.push(await ask({ method: 'GET', path: '/api/me', ip, token: 'read' }));
    answers.push(await ask({ method: 'GET', path: '/api/me', ip }));
    answers.push(await ask({ method: 'GET', path: '/api', ip }));
    expect(answers).toMatchSnapshot();
  });
});

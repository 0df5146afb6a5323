// The admin API's limit on token guesses, against the real program: at most ADMIN_AUTH_FAILURES wrong
// tokens from one address are checked per minute, however many arrive at once (each guess is counted
// before its token is looked up, not after its failure). A valid token is counted only while it is
// checked: the limit's worth at once, and any number in a row, all pass. In-memory stores, and Redis
// when REDIS_URL is given.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { startProgram } from '../helpers/program.js';
import { freePort } from '../helpers/redis-server.js';
import { ADMIN_AUTH_FAILURES } from '../../src/admin-api/auth.js';

const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

async function program(env: Record<string, string>): Promise<{ base: string; token: string }> {
  const [port, admin, backend, api] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const p = await startProgram({
    PORT: String(port),
    ADMIN_PORT: String(admin),
    BACKEND_PORT: String(backend),
    ADMIN_API_PORT: String(api),
    HOST: '127.0.0.1',
    DATA_DIR: 'memory://',
    TRUST_PROXY: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ...env,
  });
  started.push(p.child);
  const token = /admin token \(write, this start only\): (\S+)/.exec(p.output())?.[1];
  expect(token, p.output()).toBeTruthy();
  return { base: `http://127.0.0.1:${api}`, token: token! };
}

const me = (base: string, token: string, ip: string) =>
  fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': ip } });

/**
 * `GET /api/me` with each token on its own connection, all connected first and then written in one go,
 * so that the program reads them together: the status and Retry-After of each answer.
 */
async function atOnce(base: string, tokens: string[], ip: string): Promise<{ status: number; retryAfter: number }[]> {
  const port = Number(new URL(base).port);
  const sockets = await Promise.all(
    tokens.map(
      () =>
        new Promise<net.Socket>((done, fail) => {
          const s = net.connect(port, '127.0.0.1', () => done(s));
          s.on('error', fail);
        }),
    ),
  );
  const answers = sockets.map(
    (s) =>
      new Promise<string>((done) => {
        let text = '';
        s.on('data', (c) => (text += c));
        s.on('end', () => done(text));
      }),
  );
  sockets.forEach((s, i) =>
    s.write(
      `GET /api/me HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${tokens[i]}\r\nx-forwarded-for: ${ip}\r\nconnection: close\r\n\r\n`,
    ),
  );
  return (await Promise.all(answers)).map((text) => ({
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
    retryAfter: Number(/\r\nretry-after: (\d+)/i.exec(text)?.[1] ?? 0),
  }));
}

function cases(env: () => Record<string, string>) {
  // One program for both tests: each guesses from addresses of its own (the count is per address), so
  // neither sees the other's guesses, and a start of the program is most of either test's time.
  let gate: { base: string; token: string };
  beforeAll(async () => {
    gate = await program(env());
  }, 120_000);

  it('200 wrong tokens at once from one address: at most the limit are checked (401), the rest refused (429)', async () => {
    const { base, token } = gate;
    const wrong = Array.from({ length: 200 }, (_, i) => `kga_${String(i).padStart(40, 'x')}`);
    const answers = await Promise.all(wrong.map((t) => me(base, t, '203.0.113.7')));
    const statuses = answers.map((r) => r.status);
    const checked = statuses.filter((s) => s === 401).length;
    expect(
      statuses.every((s) => s === 401 || s === 429),
      String(statuses),
    ).toBe(true);
    expect(checked).toBeGreaterThan(0);
    expect(checked).toBeLessThanOrEqual(ADMIN_AUTH_FAILURES);
    for (const r of answers.filter((a) => a.status === 429)) {
      expect((await r.json()).error.code).toBe('too_many_attempts');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // The address stays refused, even with the right token; another address is not.
    expect((await me(base, token, '203.0.113.7')).status).toBe(429);
    expect((await me(base, token, '203.0.113.8')).status).toBe(200);
  }, 120_000);

  it('a valid token is not counted once checked: the limit at once and many in a row from one address all pass', async () => {
    const { base, token } = gate;
    const n = ADMIN_AUTH_FAILURES;
    for (let round = 0; round < 3; round++) {
      const burst = await atOnce(base, Array(n).fill(token), '203.0.113.9');
      expect(burst.map((r) => r.status)).toEqual(Array(n).fill(200));
    }
    for (let i = 0; i < 3 * ADMIN_AUTH_FAILURES; i++) expect((await me(base, token, '203.0.113.9')).status).toBe(200);
    // Its failures still count: the limit's worth of wrong tokens, then the next is refused.
    for (let i = 0; i < ADMIN_AUTH_FAILURES; i++)
      expect((await me(base, `kga_${'y'.repeat(40)}`, '203.0.113.9')).status).toBe(401);
    expect((await me(base, `kga_${'y'.repeat(40)}`, '203.0.113.9')).status).toBe(429);
  }, 120_000);
}

describe('in-memory stores', () => cases(() => ({})));

// Needs a Redis server: the fleet-wide count lives there when REDIS_URL is set.
describe.skipIf(!process.env.REDIS_URL)('Redis stores', () =>
  cases(() => ({ REDIS_URL: process.env.REDIS_URL!, REDIS_KEY_PREFIX: `kg-guess-${process.pid}-${Date.now()}:` })),
);

// The load test of a running keygate (src/loadtest/): its exactness audit finds each kind of violation
// and passes a correct run; against two real gateway instances sharing Redis and PostgreSQL it reports
// one exact budget per key; against a server that over-admits it fails; the reports hold no secret and
// fetch nothing.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit, type AuditAnswer } from '../../src/loadtest/audit.js';
import { parseOptions, parseRoute, UsageError } from '../../src/loadtest/options.js';
import { runLoad } from '../../src/loadtest/run.js';
import { buildReport, reportHtml } from '../../src/loadtest/report.js';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { createRedisStores } from '../../src/limits/redis/index.js';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import { haveRedis, testRedisClient } from '../helpers/redis.js';
import type { SharedStores } from '../../src/limits/types.js';
import { listenLocal } from '../helpers/listen.js';

const RESET = 1_795_000_020;
const base = (over: Partial<AuditAnswer>): AuditAnswer => ({
  key: 0,
  address: '',
  at: (RESET - 30) * 1000,
  status: 200,
  code: null,
  bucket: 'read',
  limit: 3,
  remaining: 2,
  reset: RESET,
  ipLimit: 100,
  ipRemaining: 99,
  retryAfter: null,
  ...over,
});
/** `n` admitted answers of one window counting down from limit - 1, with the address layer alike. */
const countdown = (n: number, over: Partial<AuditAnswer> = {}) =>
  Array.from({ length: n }, (_, i) => base({ remaining: 2 - i, ipRemaining: 99 - i, ...over }));

describe('the exactness audit', () => {
  it('passes an exact window, a refusal with a long enough Retry-After and a retry from the next window', () => {
    const r = audit([
      ...countdown(3),
      base({ status: 429, code: '150005', remaining: 0, ipRemaining: 96, retryAfter: 30 }),
      base({ at: RESET * 1000 + 5, reset: RESET + 60, remaining: 2, ipRemaining: 99, afterRetry: { reset: RESET } }),
    ]);
    expect(r.violations).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.refusals).toBe(1);
    expect([r.retriesHonoured, r.retriesInFreshWindow]).toEqual([1, 1]);
    expect(r.windows.find((w) => w.layer === 'key' && w.reset === RESET)).toMatchObject({
      limit: 3,
      admitted: 3,
      refused: 1,
    });
  });

  it('takes gaps in the countdown (other clients spending the key) as exact', () => {
    expect(audit([base({ remaining: 2 }), base({ remaining: 0, ipRemaining: 97 })]).ok).toBe(true);
  });

  it.each([
    ['over-budget', [...countdown(3), base({ remaining: 0, ipRemaining: 90 })]],
    ['duplicate-remaining', [base({ remaining: 1 }), base({ remaining: 1, ipRemaining: 98 })]],
    ['remaining-out-of-range', [base({ remaining: 3 })]],
    ['missing-retry-after', [base({ status: 429, code: '150005', remaining: 0 })]],
    ['retry-after-too-short', [base({ status: 429, code: '150005', remaining: 0, retryAfter: 10 })]],
    ['retry-same-window', [base({ afterRetry: { reset: RESET } })]],
    ['missing-fields', [base({ limit: null, remaining: null, reset: null, bucket: null })]],
    [
      'over-budget',
      [
        base({ remaining: 2, month: { limit: 1, remaining: 0, reset: RESET + 86_400 } }),
        base({ remaining: 1, ipRemaining: 98, month: { limit: 1, remaining: 0, reset: RESET + 86_400 } }),
      ],
    ],
  ] as const)('finds %s', (kind, answers) => {
    const r = audit(answers);
    expect(r.ok).toBe(false);
    expect(r.violations.map((v) => v.kind)).toContain(kind);
  });

  it("takes keygate's 404 for a path outside /v1 and /v2 (no fields) as a refusal, an upstream's 404 as admitted", () => {
    const none = { limit: null, remaining: null, reset: null, ipLimit: null, ipRemaining: null, bucket: null };
    expect(audit([base({ status: 404, code: 'not_found', ...none })]).ok).toBe(true);
    expect(audit([base({ status: 404, code: 'not_found' })]).windows[0]).toMatchObject({ admitted: 1 });
  });

  it('does not count refusals before the rate-limit step, and audits the address layer across keys', () => {
    const r = audit([
      base({ status: 401, code: '150002', limit: null, remaining: null, reset: null }),
      base({ status: 403, code: '150003', remaining: 2 }),
      base({ key: 0, remaining: 2, ipRemaining: 5 }),
      base({ key: 1, remaining: 2, ipRemaining: 5 }),
    ]);
    expect(r.violations.map((v) => [v.kind, v.subject])).toEqual([['duplicate-remaining', 'address of the load test']]);
  });
});

describe('options', () => {
  it('parses routes with weights and bodies, and refuses what it cannot use', () => {
    expect(parseRoute('post /v2/workspaces/100/tags 2 {"name":"x"}')).toEqual({
      method: 'POST',
      path: '/v2/workspaces/100/tags',
      weight: 2,
      body: '{"name":"x"}',
    });
    const o = parseOptions([
      '--url',
      'http://127.0.0.1:8080/x',
      '--key',
      K.partner,
      '--addresses',
      '3',
      '--rate',
      '50',
    ]);
    expect(o.urls).toEqual(['http://127.0.0.1:8080']);
    expect(o.routes).toEqual([{ method: 'GET', path: '/v1/email-accounts', weight: 1, body: undefined }]);
    expect(o.addresses).toEqual(['10.77.0.0', '10.77.0.1', '10.77.0.2']);
    for (const bad of [
      [],
      ['--url', 'ftp://x', '--key', K.wsAdmin],
      ['--url', 'http://x', '--key', 'short'],
      ['--url', 'http://x', '--key', K.wsAdmin, '--rate', '0'],
      ['--url', 'http://x', '--key', K.wsAdmin, '--route', 'GET nopath'],
      ['--url', 'http://x', '--key', K.wsAdmin, '--bogus'],
    ]) {
      expect(() => parseOptions(bad), JSON.stringify(bad)).toThrow(UsageError);
    }
  });

  it('the command exits 2 with one line for a bad argument', async () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ['--import', 'tsx', 'src/loadtest/cli.ts', '--url', 'http://127.0.0.1:1'],
        { cwd: root },
        (_e, _o, stderr) => resolve({ code: child.exitCode, stderr }),
      );
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^loadtest: --key is required/);
  });
});

describe('against two gateway instances', () => {
  const clock = new FakeClock();
  const extra: SharedStores[] = [];
  let a: Stack;
  let b: Stack;
  beforeAll(async () => {
    const prefix = `t${randomBytes(4).toString('hex')}:`;
    const one = createMemoryStores({ clock });
    const stores = () => {
      if (!haveRedis()) return one;
      const st = createRedisStores({ redis: testRedisClient(), prefix, clock });
      extra.push(st);
      return st;
    };
    a = await startStack({ clock, stores: stores() });
    b = await startStack({ clock, db: a.db, stores: stores(), mode: 'gateway', upstreamUrl: a.backendUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    for (const st of extra) await st.close();
  });

  it('reports one exact budget per key across both, and writes reports without secrets or remote resources', async () => {
    const opts = parseOptions([
      '--url',
      a.gatewayUrl!,
      '--url',
      b.gatewayUrl!,
      '--key',
      K.wsAdmin,
      '--key',
      K.wsViewer,
      '--route',
      'GET /v2/workspaces/100/tags',
      '--requests',
      '60',
      '--duration',
      '120',
      '--connections',
      '3',
      '--no-retry-wait',
      '--quiet',
    ]);
    const run = await runLoad(opts, undefined, () => clock.now());
    const report = buildReport(opts, run);
    expect(report.audit.violations).toEqual([]);
    expect(report.audit.ok).toBe(true);
    // Both instances answered, and each key got exactly its plan's 20 reads of the window, no more.
    expect(new Set(run.answers.map((x) => x.url))).toEqual(new Set([0, 1]));
    const keyWindows = report.audit.windows.filter((w) => w.layer === 'key');
    expect(keyWindows.map((w) => [w.subject, w.limit, w.admitted])).toEqual([
      ['key 1 read', 20, 20],
      ['key 2 read', 20, 20],
    ]);
    expect(report.answers.byStatus['200']).toBe(40);
    expect(report.answers.byCode).toEqual({ '150005': 20 });

    const html = reportHtml(report);
    const json = JSON.stringify(report);
    for (const text of [html, json]) {
      expect(text).not.toContain(K.wsAdmin);
      expect(text).not.toContain(K.wsViewer.slice(7));
    }
    expect(html).toContain('uPlot');
    expect(html).not.toMatch(/<(script|link)[^>]+(src|href)=/i);
  });
});

describe('against a server that grants more than it announces', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    // Announces 5 a window and never refuses: every answer counts down from 4, then repeats 0.
    let used = 0;
    server = http.createServer((_req, res) => {
      used++;
      res.writeHead(200, {
        'content-type': 'application/json',
        'x-ratelimit-limit': '5',
        'x-ratelimit-remaining': String(Math.max(0, 5 - used)),
        'x-ratelimit-reset': String(Math.floor(Date.now() / 60_000) * 60 + 60),
        'ratelimit-policy': '"read";q=5;w=60',
      });
      res.end('{}');
    });
    ({ url } = await listenLocal(server));
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('fails the audit, naming over-budget and the repeated Remaining', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kg-loadtest-'));
    const opts = parseOptions([
      '--url',
      url,
      '--key',
      K.wsAdmin,
      '--rate',
      '200',
      '--duration',
      '1',
      '--quiet',
      '--out',
      dir,
    ]);
    const report = buildReport(opts, await runLoad(opts));
    expect(report.audit.ok).toBe(false);
    const kinds = new Set(report.audit.violations.map((v) => v.kind));
    expect(kinds.has('over-budget') || kinds.has('duplicate-remaining')).toBe(true);
    expect(kinds.has('duplicate-remaining')).toBe(true);
  });
});

// The load tester as its users run it: the command (src/loadtest/cli.ts) as a child process, against a
// real keygate and against gateways of the test's own whose answers hit what the exactness audit must
// catch (a monthly quota over-admitted by one, a key given twice over-admitted, an admitted answer without
// its rate-limit fields); the docs' first example measuring something; a bad argument's one line; the
// default report directory kept out of Git, ESLint and Prettier; the HTML report in headless Chromium.
import http from 'node:http';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { ESLint } from 'eslint';
import { listenLocal } from '../helpers/listen.js';
import { freePort } from '../helpers/redis-server.js';
import { startProgram, type Program } from '../helpers/program.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run loadtest -- <args>` without npm's own lines: the command's entry point under tsx. */
function loadtest(args: string[], cwd = ROOT): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src/loadtest/cli.ts'), ...args],
      { cwd, timeout: 120_000 },
      (_e, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

const out = () => mkdtempSync(join(tmpdir(), 'kg-loadtest-'));
const report = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as {
    throughput: { answered: number };
    audit: { ok: boolean; violations: { kind: string; subject: string; detail: string }[] };
  };

/** A gateway of the test's own: `answer(n, req)` gives the head of its nth answer (1-based). */
async function fakeGateway(
  answer: (n: number, req: http.IncomingMessage) => { status: number; headers: Record<string, string> },
): Promise<{ url: string; close: () => Promise<void> }> {
  const counts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const who = String(req.headers.authorization ?? req.headers['x-api-key']);
    const n = (counts.get(who) ?? 0) + 1;
    counts.set(who, n);
    const a = answer(n, req);
    const body = a.status === 429 ? '{"errorCode":"150005","message":"Too many requests."}' : '{"data":[]}';
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
    res.end(body);
  });
  const { url } = await listenLocal(server);
  return { url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const nowS = () => Math.floor(Date.now() / 1000);
/** The end of the current UTC month, unix seconds, and its length in seconds. */
function month(): { end: number; seconds: number } {
  const d = new Date();
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
  return { end, seconds: end - start };
}

/** The fields keygate sends on a /v2 answer: the key's bucket, the address layer, and a month when given. */
function fields(
  o: { limit: number; remaining: number; reset: number; ip: number },
  m?: { quota: number; left: number },
): Record<string, string> {
  const t = Math.max(0, o.reset - nowS());
  const mo = month();
  return {
    'x-ratelimit-limit': String(o.limit),
    'x-ratelimit-remaining': String(o.remaining),
    'x-ratelimit-reset': String(o.reset),
    'x-ratelimit-ip-limit': '100000',
    'x-ratelimit-ip-remaining': String(o.ip),
    'ratelimit-policy': `"read";q=${o.limit};w=60, "ip";q=100000;w=60${m ? `, "month";q=${m.quota};w=${mo.seconds}` : ''}`,
    ratelimit: `"read";r=${o.remaining};t=${t}, "ip";r=${o.ip};t=${t}${m ? `, "month";r=${m.left};t=${mo.end - nowS()}` : ''}`,
  };
}

const KEY = 'svc_ws_LoadTestBlindSpotKey000000000000001';

describe('the audit fails a gateway that over-admits where it did not look', () => {
  it('a monthly quota of 10 over-admitted by one (the minute within its budget)', async () => {
    const reset = nowS() + 60;
    let total = 0;
    const gw = await fakeGateway((n) => {
      total++;
      const minute = { limit: 100, remaining: 100 - n, reset, ip: 100000 - total };
      // Eleven admitted of a quota of 10: the eleventh announces the last one again, as a clamped counter does.
      if (n <= 11) return { status: 200, headers: fields(minute, { quota: 10, left: Math.max(0, 10 - n) }) };
      const mo = month();
      return {
        status: 429,
        headers: { ...fields(minute, { quota: 10, left: 0 }), 'retry-after': String(mo.end - nowS()) },
      };
    });
    try {
      const r = await loadtest([
        '--url',
        gw.url,
        '--key',
        KEY,
        '--requests',
        '15',
        '--connections',
        '1',
        '--no-retry-wait',
        '--quiet',
        '--out',
        out(),
      ]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toMatch(/over-budget: key 1 month: 11 admitted of a budget of 10/);
    } finally {
      await gw.close();
    }
  });

  it('a key given twice, over-admitted by one (21 of 20)', async () => {
    const reset = nowS() + 60;
    const gw = await fakeGateway((n) => {
      const minute = { limit: 20, remaining: Math.max(0, 20 - n), reset, ip: 100000 - n };
      if (n <= 21) return { status: 200, headers: fields(minute) };
      return { status: 429, headers: { ...fields(minute), 'retry-after': String(Math.max(1, reset - nowS())) } };
    });
    try {
      const dir = out();
      const r = await loadtest([
        '--url',
        gw.url,
        '--key',
        KEY,
        '--key',
        KEY,
        '--requests',
        '30',
        '--connections',
        '1',
        '--no-retry-wait',
        '--quiet',
        '--out',
        dir,
      ]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toMatch(/over-budget: key 1 read: 21 admitted of a budget of 20/);
      expect(r.stdout + JSON.stringify(report(dir))).not.toContain(KEY);
    } finally {
      await gw.close();
    }
  });

  it('an admitted answer without its rate-limit fields', async () => {
    const reset = nowS() + 60;
    const gw = await fakeGateway((n) =>
      n === 3
        ? { status: 200, headers: {} }
        : { status: 200, headers: fields({ limit: 20, remaining: 20 - n, reset, ip: 100000 - n }) },
    );
    try {
      const dir = out();
      const r = await loadtest([
        '--url',
        gw.url,
        '--key',
        KEY,
        '--requests',
        '5',
        '--connections',
        '1',
        '--quiet',
        '--out',
        dir,
      ]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toMatch(/missing-fields: key 1: 1 admitted answer\(s\) without rate-limit fields/);
    } finally {
      await gw.close();
    }
  });
});

describe('the command line', () => {
  it.each([
    [['--url', 'http://127.0.0.1:1']],
    [['--url', 'http://127.0.0.1:1', '--key', KEY, '--bogus']],
    [['--url', 'http://127.0.0.1:1', '--key', KEY, '--rate', 'x']],
  ])(
    'a bad argument: exit 2 and exactly one line on stderr (%j)',
    async (args) => {
      const r = await loadtest(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^loadtest: [^\n]+\n$/);
    },
    60_000,
  );

  it('the default report directory is kept out of Git, ESLint and Prettier (npm run lint stays green)', async () => {
    const reset = nowS() + 60;
    const gw = await fakeGateway((n) => ({
      status: 200,
      headers: fields({ limit: 20, remaining: 20 - n, reset, ip: 100000 - n }),
    }));
    let dir = '';
    try {
      const r = await loadtest(['--url', gw.url, '--key', KEY, '--requests', '3', '--connections', '1', '--quiet']);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const html = /^report: (.+\.html) \(and report\.json\)$/m.exec(r.stdout)?.[1];
      expect(html, r.stdout).toBeTruthy();
      dir = dirname(html!);
      const inside = !relative(ROOT, dir).startsWith('..');
      if (inside) {
        const files = ['report.html', 'report.json'].map((f) => join(dir, f));
        const gitIgnored = await new Promise<string>((res) =>
          execFile('git', ['check-ignore', ...files], { cwd: ROOT }, (_e, o) => res(o)),
        );
        expect(gitIgnored.trim().split('\n'), 'git check-ignore').toEqual(files);
        const eslint = new ESLint({ cwd: ROOT });
        for (const f of files) expect(await eslint.isPathIgnored(f), `eslint ignores ${f}`).toBe(true);
        for (const f of files) {
          const info = await new Promise<string>((res) =>
            execFile(join(ROOT, 'node_modules/.bin/prettier'), ['--file-info', f], { cwd: ROOT }, (_e, o) => res(o)),
          );
          expect(JSON.parse(info).ignored, `prettier ignores ${f}: ${info}`).toBe(true);
        }
      }
    } finally {
      await gw.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      // The parent the command made, when nothing else is in it.
      if (dir && readdirSync(dirname(dir)).length === 0) rmdirSync(dirname(dir));
    }
  }, 60_000);
});

describe('the first example of docs/loadtest.md against the real program', () => {
  let program: Program;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    program = await startProgram({
      PORT: String(port),
      ADMIN_PORT: String(await freePort()),
      BACKEND_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      DATA_DIR: 'memory://',
      ACCESS_LOG: 'off',
      LOG_LEVEL: 'warn',
    });
  }, 90_000);
  afterAll(() => {
    if (program?.child.exitCode === null) program.child.kill('SIGKILL');
  });

  it('measures the gateway: many answers, not the key budget and a wait for Retry-After', async () => {
    const doc = readFileSync(join(ROOT, 'docs/loadtest.md'), 'utf8');
    const first = /```sh\n(npm run loadtest -- [^\n]+)\n/.exec(doc)?.[1];
    expect(first).toBeTruthy();
    // The example as written, pointed at this program, for 5 s instead of its 30 (the last --duration wins).
    const args = first!
      .replace(/^npm run loadtest -- /, '')
      .replace('http://127.0.0.1:8080', `http://127.0.0.1:${port}`)
      .split(/\s+/);
    const dir = out();
    const r = await loadtest([...args, '--duration', '5', '--quiet', '--out', dir]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const rep = report(dir);
    expect(rep.audit.ok).toBe(true);
    // One key of the demo seed may spend 20 reads a minute: a run that only spends them (and waits out the
    // refusal's Retry-After) answers 21 times whatever the gateway's speed.
    expect(rep.throughput.answered, r.stdout).toBeGreaterThan(200);
  }, 60_000);
});

// Chromium is installed by the chromium package; on a machine without it this part cannot run.
describe.skipIf(!existsSync(CHROMIUM))('the HTML report in headless Chromium', () => {
  it('shows values in the legends and the admitted series on a scale of its own when refusals dominate', async () => {
    const reset = nowS() + 60;
    const gw = await fakeGateway((n) => {
      const minute = { limit: 5, remaining: Math.max(0, 5 - n), reset, ip: 100000 - n };
      if (n <= 5) return { status: 200, headers: fields(minute) };
      return { status: 429, headers: { ...fields(minute), 'retry-after': String(Math.max(1, reset - nowS())) } };
    });
    const dir = out();
    let r: Run;
    try {
      r = await loadtest([
        '--url',
        gw.url,
        '--key',
        KEY,
        '--duration',
        '2',
        '--connections',
        '4',
        '--no-retry-wait',
        '--quiet',
        '--out',
        dir,
      ]);
    } finally {
      await gw.close();
    }
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const profile = mkdtempSync(join(tmpdir(), 'kg-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      viewport: { width: 1280, height: 900 },
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`file://${join(dir, 'report.html')}`);
      await page.waitForSelector('#adm canvas');
      const values = await page.$$eval('.u-legend .u-value', (els) => els.map((e) => e.textContent ?? ''));
      expect(values.length).toBeGreaterThanOrEqual(6);
      for (const v of values) expect(v.trim(), JSON.stringify(values)).not.toMatch(/^(--)?$/);
      // The admitted line's highest pixel: with its own scale, the second of the five admitted answers
      // reaches the top half of the plot; on the refusals' scale it lies flat on the floor.
      const top = await page.$eval('#adm canvas', (el) => {
        const c = el as HTMLCanvasElement;
        const px = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        for (let y = 0; y < c.height; y++)
          for (let x = 0; x < c.width; x++) {
            const [r, g, b, a] = [
              px[(y * c.width + x) * 4],
              px[(y * c.width + x) * 4 + 1],
              px[(y * c.width + x) * 4 + 2],
              px[(y * c.width + x) * 4 + 3],
            ];
            if (a > 100 && g > r + 40 && g > b + 20) return y / c.height;
          }
        return 1;
      });
      expect(top).toBeLessThan(0.5);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }, 90_000);
});

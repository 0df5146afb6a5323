// The load test under a rest profile (`--profile`), as its users run it: the command (src/loadtest/cli.ts)
// as a child process against gateways of the test's own that answer as keygate does under the profile
// (problem details with its codes, its header families, its address layer) or depart from it where the
// audit must catch it: a key layer over-admitted when only the draft's fields announce it, the fields of
// a family the profile turns off, an address layer it has none of.
import http from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listenLocal } from '../helpers/listen.js';
import { loadtest, ROOT } from '../fixtures/profiles/d-loadtest.js';

const SHOP = 'test/fixtures/profiles/d-shop.yaml';
const IETF = 'test/fixtures/profiles/d-shop-ietf.yaml';
const KEY_A = 'shop_LoadTestProfileKeyA000000000000000001';
const KEY_B = 'shop_LoadTestProfileKeyB000000000000000002';

interface Report {
  target: { profile?: string; routes: { method: string; path: string }[] };
  answers: { byCode: Record<string, number>; admitted: number; rateLimited: number };
  audit: {
    ok: boolean;
    violations: { kind: string; subject: string; detail: string }[];
    windows: { layer: string; subject: string; limit: number; admitted: number; refused: number }[];
  };
}
const out = () => mkdtempSync(join(tmpdir(), 'kg-loadtest-profile-'));
const report = (dir: string) => JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as Report;

interface Fake {
  /** The families the fake answers with, and its address layer's limit (null: none). */
  families: { x: boolean; ietf: boolean };
  address: number | null;
  /** Each key's read budget a minute; `overAdmit` more are let through, as a broken counter would. */
  budget: number;
  overAdmit?: number;
  /** The refusal's code and type base of the profile. */
  code: string;
}

/** A gateway of the test's own answering as keygate under a profile does; it records each request's head. */
async function fakeGateway(f: Fake) {
  const seen: { url: string; headers: http.IncomingHttpHeaders }[] = [];
  const counts = new Map<string, number>();
  let ipSpent = 0;
  // One window for the whole run, ending on a minute as the gateway's do.
  const reset = (Math.floor(Date.now() / 60_000) + 1) * 60;
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url!, headers: req.headers });
    const who = String(req.headers.authorization ?? req.headers['x-shop-key']);
    const n = (counts.get(who) ?? 0) + 1;
    counts.set(who, n);
    ipSpent++;
    const t = Math.max(0, Math.ceil(reset - Date.now() / 1000));
    const remaining = Math.max(0, f.budget - n);
    const ipRemaining = Math.max(0, (f.address ?? 0) - ipSpent);
    const h: Record<string, string> = {};
    if (f.families.x) {
      Object.assign(h, {
        'x-ratelimit-limit': f.budget,
        'x-ratelimit-remaining': remaining,
        'x-ratelimit-reset': reset,
      });
      if (f.address !== null)
        Object.assign(h, { 'x-ratelimit-ip-limit': f.address, 'x-ratelimit-ip-remaining': ipRemaining });
    }
    if (f.families.ietf) {
      const ip = f.address !== null;
      h['ratelimit-policy'] = `"read";q=${f.budget};w=60${ip ? `, "ip";q=${f.address};w=60` : ''}`;
      h.ratelimit = `"read";r=${remaining};t=${t}${ip ? `, "ip";r=${ipRemaining};t=${t}` : ''}`;
    }
    if (n <= f.budget + (f.overAdmit ?? 0)) {
      res.writeHead(200, { 'content-type': 'application/json', ...h });
      return res.end('{"orders":[]}');
    }
    res.writeHead(429, { 'content-type': 'application/problem+json', 'retry-after': String(Math.max(1, t)), ...h });
    res.end(
      JSON.stringify({
        type: `https://shop.example/problems/${f.code}`,
        title: 'Rate limit exceeded.',
        status: 429,
        detail: 'Rate limit exceeded for the Read bucket.',
        code: f.code,
        request_id: 'r1',
      }),
    );
  });
  const { url } = await listenLocal(server);
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});
async function gateway(f: Fake) {
  const g = await fakeGateway(f);
  closers.push(g.close);
  return g;
}
const args = (url: string, profile: string, requests: number, dir: string, keys = [KEY_A]) => [
  '--url',
  url,
  ...keys.flatMap((k) => ['--key', k]),
  '--profile',
  profile,
  '--requests',
  String(requests),
  '--connections',
  '1',
  '--no-retry-wait',
  '--quiet',
  '--out',
  dir,
];

describe('npm run loadtest -- --profile', () => {
  it("loads the profile's first forwarded GET with its key field; its own codes refuse; both families and the address audited", async () => {
    const gw = await gateway({ families: { x: true, ietf: true }, address: 100, budget: 5, code: 'slow-down' });
    const dir = out();
    const r = await loadtest(args(gw.url, SHOP, 16, dir, [KEY_A, KEY_B]));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    // The key alone in the profile's field, never as a bearer token; the route of the profile's table.
    expect(gw.seen.every((s) => s.url === '/api/orders' && s.headers.authorization === undefined)).toBe(true);
    expect(new Set(gw.seen.map((s) => s.headers['x-shop-key']))).toEqual(new Set([KEY_A, KEY_B]));
    const rep = report(dir);
    expect(rep.target.profile).toBe('shop');
    expect(rep.answers).toMatchObject({ admitted: 10, rateLimited: 6, byCode: { 'slow-down': 6 } });
    expect(rep.audit.windows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ layer: 'key', subject: 'key 1 read', limit: 5, admitted: 5, refused: 3 }),
        expect.objectContaining({ layer: 'address', limit: 100, admitted: 10, refused: 6 }),
      ]),
    );
    expect(r.stdout + readFileSync(join(dir, 'report.json'), 'utf8')).not.toContain(KEY_A);
  });

  it('only the draft fields: the key layer read from RateLimit, a bearer key, the profile first forwarded GET', async () => {
    const gw = await gateway({ families: { x: false, ietf: true }, address: null, budget: 4, code: 'rate-limited' });
    const dir = out();
    const r = await loadtest(args(gw.url, IETF, 7, dir));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(gw.seen[0]).toMatchObject({ url: '/shop/v3/orders/1', headers: { authorization: `Bearer ${KEY_A}` } });
    expect(report(dir).audit.windows).toEqual([
      expect.objectContaining({ layer: 'key', subject: 'key 1 read', limit: 4, admitted: 4, refused: 3 }),
    ]);
  });

  it('a key layer over-admitted by one is caught from the draft fields alone', async () => {
    const gw = await gateway({
      families: { x: false, ietf: true },
      address: null,
      budget: 4,
      overAdmit: 1,
      code: 'rate-limited',
    });
    const r = await loadtest(args(gw.url, IETF, 7, out()));
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/over-budget: key 1 read: 5 admitted of a budget of 4/);
  });

  it('fields of a family the profile turns off and an address layer it has none of are violations', async () => {
    const gw = await gateway({ families: { x: true, ietf: true }, address: 50, budget: 4, code: 'rate-limited' });
    const r = await loadtest(args(gw.url, IETF, 6, out()));
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(
      /profile-fields: key 1: 4 admitted answer\(s\) with X-RateLimit-\*, a family the profile turns off/,
    );
    expect(r.stdout).toMatch(
      /address-layer: key 1: 4 admitted answer\(s\) announcing an address layer the profile has none of/,
    );
  });

  it('a gateway short of a family the profile turns on, or of its address layer, is caught too', async () => {
    const gw = await gateway({ families: { x: false, ietf: true }, address: null, budget: 3, code: 'slow-down' });
    const r = await loadtest(args(gw.url, SHOP, 4, out()));
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/profile-fields: key 1: 3 admitted answer\(s\) without X-RateLimit-\*/);
    expect(r.stdout).toMatch(
      /address-layer: key 1: 3 admitted answer\(s\) without the address layer \(100 per minute\)/,
    );
  });

  it('a mistake in the profile is its one line and exit code 2', async () => {
    const bad = join(out(), 'bad.yaml');
    writeFileSync(bad, readFileSync(join(ROOT, SHOP), 'utf8').replace('header: x-shop-key', 'header: "bad header"'));
    const r = await loadtest(['--url', 'http://127.0.0.1:1', '--key', KEY_A, '--profile', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^loadtest: profile .*bad\.yaml: key\.header: /),
    ]);
  });
});

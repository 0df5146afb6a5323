// Strict config, validated once, failing with the field's name (CONTRIBUTING.md, adding a setting).
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';
import { parsePlans, planOf } from '../../src/config/plans.js';
import { parseRoutes } from '../../src/config/routes.js';
import { ConfigError } from '../../src/config/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'kg-config-'));
const plans = JSON.parse(readFileSync('config/plans.json', 'utf8'));
const routes = JSON.parse(readFileSync('config/routes.json', 'utf8'));

describe('settings', () => {
  it('defaults follow docs/decisions.md section 1', () => {
    const s = loadSettings({});
    expect(s).toMatchObject({
      PORT: 8080,
      BACKEND_PORT: 8081,
      ADMIN_PORT: 9090,
      HOST: '0.0.0.0',
      ADMIN_HOST: '127.0.0.1',
      ADMIN_API_HOST: '127.0.0.1',
      UPSTREAM_URL: 'http://127.0.0.1:8081',
      DATA_DIR: '.data',
      RATE_LIMIT_FAILURE_MODE: 'open',
      LOG_LEVEL: 'info',
      TRUST_PROXY: [],
    });
  });
  it.each([
    [{ PORT: 'eighty' }, /^setting PORT: /],
    [{ PORT: '70000' }, /^setting PORT: /],
    [{ RATE_LIMIT_FAILURE_MODE: 'maybe' }, /^setting RATE_LIMIT_FAILURE_MODE: /],
    [{ REDIS_URL: 'not a url' }, /^setting REDIS_URL: /],
    [{ LOG_LEVEL: 'loud' }, /^setting LOG_LEVEL: /],
    [{ BACKEND_UNSIGNED_BODY: 'yes' }, /^setting BACKEND_UNSIGNED_BODY: /],
    [{ GATEWAY_MAX_CONNECTIONS: '0' }, /^setting GATEWAY_MAX_CONNECTIONS: /],
    [{ GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: 'many' }, /^setting GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: /],
    [{ ADMIN_API_MAX_CONNECTIONS: '1.5' }, /^setting ADMIN_API_MAX_CONNECTIONS: /],
    [{ ADMIN_API_MAX_CONNECTIONS_PER_ADDRESS: '-1' }, /^setting ADMIN_API_MAX_CONNECTIONS_PER_ADDRESS: /],
    [{ DATABASE_APP_ROLE: 'app; DROP TABLE x' }, /^setting DATABASE_APP_ROLE: must be a PostgreSQL role name/],
  ])('%o is refused with one line naming it', (env, msg) => {
    expect(() => loadSettings(env as NodeJS.ProcessEnv)).toThrowError(msg);
  });
  it('the split programs need their secrets', () => {
    expect(() => loadSettings({ DATABASE_URL: 'postgres://x@y/z' }, 'gateway')).toThrowError(/GATEWAY_SECRET/);
    expect(() => loadSettings({}, 'backend')).toThrowError(/DATABASE_URL/);
  });
  it('reads CONFIG_FILE, the environment wins, unknown file keys are refused', () => {
    const f = join(dir, 'c.json');
    writeFileSync(f, JSON.stringify({ PORT: 9000, ADMIN_PORT: 9100 }));
    expect(loadSettings({ CONFIG_FILE: f, PORT: '9001' })).toMatchObject({ PORT: 9001, ADMIN_PORT: 9100 });
    writeFileSync(f, JSON.stringify({ PROT: 9000 }));
    expect(() => loadSettings({ CONFIG_FILE: f })).toThrowError(/PROT: unknown field/);
  });
  it('the CLI stops with one line naming the setting and exit code 2', () => {
    let out = '';
    let code = 0;
    try {
      execFileSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'start'], {
        env: { ...process.env, PORT: 'x' },
        stdio: 'pipe',
      });
    } catch (err) {
      const e = err as { status: number; stderr: Buffer };
      code = e.status;
      out = e.stderr.toString();
    }
    expect(code).toBe(2);
    expect(out.trim().split('\n')).toHaveLength(1);
    expect(out).toMatch(/^keygate: setting PORT: /);
  });
});

describe('plans.json', () => {
  it("holds the spec's per-minute budgets for all eight tiers", () => {
    const p = parsePlans(plans);
    expect(Object.fromEntries(Object.entries(p).map(([k, v]) => [k, [v.read, v.write, v.bulk]]))).toEqual({
      free: [5, 2, 1],
      trial: [20, 10, 4],
      starter: [10, 5, 2],
      growth: [20, 10, 4],
      scale: [30, 15, 6],
      scale_5k: [40, 20, 8],
      scale_10k: [45, 22, 9],
      scale_20k: [50, 25, 10],
    });
  });
  it.each([
    [(p: any) => delete p.growth, /plans growth: /],
    [(p: any) => (p.growth.read = 0), /plans growth\.read: /],
    [(p: any) => (p.growth.colour = 'red'), /plans growth\.colour: unknown field/],
    // Plans are data: a new plan is accepted (below), but its name must be one the database takes,
    // and the spec's plans must all be there.
    [(p: any) => (p['Platinum!'] = p.growth), /plans Platinum!: is invalid/],
    [(p: any) => delete p.trial, /plans trial: is required/],
    [(p: any) => (p.growth.monthlyQuota = 0), /plans growth\.monthlyQuota/],
  ])('a bad plan file is refused naming the field (%#)', (mutate, msg) => {
    const p = structuredClone(plans);
    mutate(p);
    expect(() => parsePlans(p)).toThrowError(msg);
  });
  it('a plan added to the file is usable as it is, with an optional monthly quota', () => {
    const p = structuredClone(plans) as any;
    p.platinum = { ...p.growth, label: 'Platinum', read: 99, monthlyQuota: 1_000_000 };
    const parsed = parsePlans(p);
    expect(planOf(parsed, 'platinum')).toEqual({ id: 'platinum', plan: p.platinum });
    expect(planOf(parsed, 'gold').id).toBe('free');
  });
});

describe('routes.json', () => {
  it('loads and matches canonical paths, HEAD as GET', () => {
    const r = parseRoutes(routes);
    expect(r.v2.match('GET', '/v2/workspaces/100/accounts/5')?.route.scope).toBe('accounts:read');
    expect(r.v2.match('HEAD', '/v2/workspaces/100/accounts')?.route.bucket).toBe('read');
    expect(r.v2.match('POST', '/v2/workspaces/100/accounts/bulk-status')?.route.bucket).toBe('bulk');
    expect(r.v2.match('GET', '/v2/workspaces/quotas')?.route.scope).toBe('workspace:quota');
    expect(r.v2.match('GET', '/v2/workspaces/abc/accounts')).toBeNull();
    expect(r.v1.match('GET', '/v1/workspaces/g-12_a/preview')?.params).toEqual({ workspaceId: 'g-12_a' });
  });
  it('remembers matches per method and path, frozen, and forgets them when a route is added', () => {
    const r = parseRoutes(routes);
    const a = r.v2.match('GET', '/v2/workspaces/100/accounts/5');
    expect(r.v2.match('GET', '/v2/workspaces/100/accounts/5')).toBe(a);
    expect(r.v2.match('GET', '/v2/workspaces/100/accounts/6')?.params).toEqual({ workspaceId: '100', accountId: '6' });
    expect(Object.isFrozen(a) && Object.isFrozen(a!.params)).toBe(true);
    expect(r.v2.match('GET', '/v2/zz/1')).toBeNull();
    r.v2.add({
      method: 'GET',
      path: '/v2/zz/{id}',
      scope: null,
      minRole: null,
      bucket: 'read',
      gateway: true,
      params: ['id'],
    });
    expect(r.v2.match('GET', '/v2/zz/1')?.params).toEqual({ id: '1' });
    // Many distinct paths: the memo stays bounded and answers stay right.
    for (let i = 1; i <= 12_000; i++)
      expect(r.v2.match('GET', `/v2/workspaces/${i}/tags`)?.params.workspaceId).toBe(String(i));
  });
  it.each([
    [(f: any) => (f.v2[0].scope = 'nope:nope'), /routes v2\.0\.scope: unknown scope nope:nope/],
    [(f: any) => f.v2.push({ ...f.v2[1] }), /duplicate route POST \/v2\/workspaces/],
    [(f: any) => (f.v2[0].bucket = 'huge'), /routes v2\.0\.bucket: /],
    [(f: any) => (f.v2[0].path = '/v3/x'), /routes v2\.0\.path: must start with \/v2\//],
    [(f: any) => (f.v2[0].extra = true), /routes v2\.0\.extra: unknown field/],
  ])('a bad route file is refused naming the field (%#)', (mutate, msg) => {
    const f = structuredClone(routes);
    mutate(f);
    expect(() => parseRoutes(f)).toThrowError(msg);
  });
  it('errors are ConfigErrors', () => {
    expect(() => parseRoutes({})).toThrowError(ConfigError);
  });
});

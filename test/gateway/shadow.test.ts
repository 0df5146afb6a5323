// Shadow limits (RATE_LIMIT_MODE, a plan's or a route's limitMode): in shadow a request a rate-limit
// layer would refuse is forwarded, with the same rate-limit headers and decision metrics as in
// enforcement, logged and counted in keygate_shadow_refusals_total{layer}. Authentication and
// authorization refuse in every mode. Three gateways on one fake clock: enforce, global shadow, and
// shadow for one plan with one route of it enforcing.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack, type Res } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K } from '../fixtures/seed.js';
import { createLogger } from '../../src/ops/logger.js';
import { testSecret } from '../helpers/keys.js';

const clock = new FakeClock();
let enforce: Stack;
let shadow: Stack;
let mixed: Stack;
let rec: Recorder;
const shadowLines: Record<string, unknown>[] = [];
let ipN = 0;
const freshIp = () => `10.9.0.${++ipN}`;

const RATE_FIELDS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-ip-limit',
  'x-ratelimit-ip-remaining',
  'ratelimit',
  'ratelimit-policy',
];
const rateHeaders = (r: Res) => Object.fromEntries(RATE_FIELDS.map((f) => [f, r.headers.get(f)]));

async function metric(s: Stack, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${s.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => pattern.test(l));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

beforeAll(async () => {
  rec = await startRecorder();
  const dir = mkdtempSync(join(tmpdir(), 'kg-shadow-'));
  const plans = JSON.parse(readFileSync('config/plans.json', 'utf8'));
  plans.growth.limitMode = 'shadow';
  const routes = JSON.parse(readFileSync('config/routes.json', 'utf8'));
  const tags = routes.v2.find(
    (r: { method: string; path: string }) => r.method === 'GET' && r.path === '/v2/workspaces/{workspaceId}/tags',
  );
  tags.limitMode = 'enforce';
  writeFileSync(join(dir, 'plans.json'), JSON.stringify(plans));
  writeFileSync(join(dir, 'routes.json'), JSON.stringify(routes));
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) {
        const line = JSON.parse(l);
        if (String(line.msg).startsWith('shadow refusal')) shadowLines.push(line);
      }
      cb();
    },
  });
  const common = { clock, upstreamOverride: rec.url, memory: true };
  enforce = await startStack(common);
  shadow = await startStack({ ...common, env: { RATE_LIMIT_MODE: 'shadow' }, log: createLogger('info', sink) });
  mixed = await startStack({
    ...common,
    env: { PLANS_FILE: join(dir, 'plans.json'), ROUTES_FILE: join(dir, 'routes.json') },
  });
}, 120_000);
afterAll(async () => {
  await Promise.all([enforce?.close(), shadow?.close(), mixed?.close()]);
  await rec?.close();
});
beforeEach(() => {
  clock.advance(60_000);
  clock.setSecond(15);
});

const accounts = (s: Stack, key: string, ip: string) => s.request('GET', '/v2/workspaces/100/accounts', { key, ip });

describe('shadow limits', () => {
  it('forwards what enforcement refuses, with identical rate-limit headers and decision metrics, logged and counted', async () => {
    const ip = freshIp();
    for (let i = 1; i <= 20; i++) {
      const [e, s] = [await accounts(enforce, K.wsAdmin, ip), await accounts(shadow, K.wsAdmin, ip)];
      expect([e.status, s.status]).toEqual([200, 200]);
      expect(rateHeaders(s)).toEqual(rateHeaders(e));
    }
    const rejectedBefore = await metric(
      shadow,
      /^keygate_rate_limit_decisions_total\{layer="key",outcome="rejected"\}/,
    );
    const e = await accounts(enforce, K.wsAdmin, ip);
    expect(e.status).toBe(429);
    expect(e.body.errorCode).toBe('150005');
    const seen = rec.seen.length;
    const s = await accounts(shadow, K.wsAdmin, ip);
    expect(s.status).toBe(200);
    expect(rec.seen.length).toBe(seen + 1); // forwarded
    expect(rateHeaders(s)).toEqual(rateHeaders(e));
    expect(s.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(s.headers.get('retry-after')).toBeNull(); // a forwarded answer is not a refusal
    // A second one over: still forwarded, still spent.
    const e2 = await accounts(enforce, K.wsAdmin, ip);
    const s2 = await accounts(shadow, K.wsAdmin, ip);
    expect([e2.status, s2.status]).toEqual([429, 200]);
    expect(rateHeaders(s2)).toEqual(rateHeaders(e2));

    expect(await metric(shadow, /^keygate_rate_limit_decisions_total\{layer="key",outcome="rejected"\}/)).toBe(
      rejectedBefore + 2,
    );
    expect(await metric(shadow, /^keygate_shadow_refusals_total\{layer="key"\}/)).toBeGreaterThanOrEqual(2);
    expect(await metric(enforce, /^keygate_shadow_refusals_total/)).toBe(0);
    const line = shadowLines.find((l) => l.requestId === s.headers.get('x-request-id'));
    expect(line).toMatchObject({
      code: '150005',
      layers: ['key'],
      route: '/v2/workspaces/{workspaceId}/accounts',
      organizationId: 1,
      keyId: 1000,
    });
    expect(JSON.stringify(shadowLines)).not.toContain(K.wsAdmin);
  });

  it('covers the address layer too', async () => {
    const ip = freshIp();
    const [keyBefore, ipBefore] = [
      await metric(shadow, /^keygate_shadow_refusals_total\{layer="key"\}/),
      await metric(shadow, /^keygate_shadow_refusals_total\{layer="ip"\}/),
    ];
    let last: Res | null = null;
    // One key: its layer is over from the 21st request, the address's (100 a minute) at the 101st.
    for (let i = 0; i < 101; i++) last = await accounts(shadow, K.wsAdmin, ip);
    expect(last!.status).toBe(200);
    expect(last!.headers.get('x-ratelimit-ip-remaining')).toBe('0');
    expect(await metric(shadow, /^keygate_shadow_refusals_total\{layer="ip"\}/)).toBe(ipBefore + 1);
    expect(await metric(shadow, /^keygate_shadow_refusals_total\{layer="key"\}/)).toBe(keyBefore + 81);
    const line = shadowLines.find((l) => l.requestId === last!.headers.get('x-request-id'));
    expect(line?.layers).toEqual(['key', 'ip']);
  });

  it('/v1 partner layer in shadow', async () => {
    const ip = freshIp();
    for (let i = 1; i <= 20; i++)
      expect((await shadow.request('GET', '/v1/email-accounts', { apiKey: K.partner, ip })).status).toBe(200);
    const e = await enforce.request('GET', '/v1/email-accounts', { apiKey: K.partner, ip });
    const r = await shadow.request('GET', '/v1/email-accounts', { apiKey: K.partner, ip });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(e.status).toBe(200); // the enforcing gateway's own counters are apart
    expect(await metric(shadow, /^keygate_shadow_refusals_total\{layer="v1"\}/)).toBeGreaterThanOrEqual(1);
  });

  it('never shadows authentication or authorization', async () => {
    const ip = freshIp();
    expect((await shadow.request('GET', '/v2/workspaces/100/accounts', { ip })).status).toBe(401);
    expect(
      (await shadow.request('GET', '/v2/workspaces/100/accounts', { key: testSecret('svc_ws_', 'Nope'), ip })).body
        .errorCode,
    ).toBe('150002');
    const other = await shadow.request('GET', '/v2/workspaces/200/accounts', { key: K.wsAdmin, ip });
    expect(other.status).toBe(403);
    expect(other.body.errorCode).toBe('150004');
    expect((await shadow.request('GET', '/v2/workspaces/100/accounts', { key: K.org2Ws, ip })).status).toBe(403);
  });

  it('a route setting wins over the plan, and the plan over the global mode', async () => {
    const ip = freshIp();
    for (let i = 1; i <= 20; i++) expect((await accounts(mixed, K.wsAdmin, ip)).status).toBe(200);
    // Growth is in shadow: the accounts route forwards past the budget ...
    expect((await accounts(mixed, K.wsAdmin, ip)).status).toBe(200);
    // ... but the tags route (same read bucket, now over) enforces.
    const tags = await mixed.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip });
    expect(tags.status).toBe(429);
    expect(tags.headers.get('retry-after')).toBe('45');
    // Beta's plan (free: 5 reads) has no setting: the global mode, enforce.
    const ip2 = freshIp();
    for (let i = 1; i <= 5; i++)
      expect((await mixed.request('GET', '/v2/workspaces/200/accounts', { key: K.org2Ws, ip: ip2 })).status).toBe(200);
    expect((await mixed.request('GET', '/v2/workspaces/200/accounts', { key: K.org2Ws, ip: ip2 })).status).toBe(429);
  });
});

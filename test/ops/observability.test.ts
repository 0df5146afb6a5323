// Metrics and logs: what operators see, and what must never appear there (keys, tokens, IPs as labels).
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { createLogger, flushAccessLines } from '../../src/ops/logger.js';

const clock = new FakeClock();
let s: Stack;
let logs = '';
beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs += chunk;
      cb();
    },
  });
  s = await startStack({ clock, log: createLogger('debug', sink) });
  // Accepted, rejected by limit, invalid key, cooldown, unknown route, /v1, api-key creation.
  for (let i = 0; i < 22; i++) await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.5.0.1' });
  for (let i = 0; i < 6; i++)
    await s.request('GET', '/v2/workspaces/100/tags', { key: 'svc_ws_' + 'S'.repeat(40), ip: '10.5.0.2' });
  await s.request('GET', '/v2/workspaces/100/nowhere', { key: K.wsAdmin, ip: '10.5.0.3' });
  await s.request('GET', '/v1/dashboard', { apiKey: K.partner, ip: '10.5.0.4' });
  await s.session('POST', '/api-keys', K.session, { name: 'obs', type: 'personal', scopes: [] });
  await s.request('GET', '/v2/workspaces/100/accounts/5000', { key: K.ownerPk, ip: '10.5.0.5' });
});
afterAll(async () => s?.close());

describe('admin listener', () => {
  it('/healthz and /readyz answer; other paths are 404', async () => {
    expect((await fetch(s.adminUrl + '/healthz')).status).toBe(200);
    // Readiness is this process's state; the dependencies are reported, not gated on.
    expect(await (await fetch(s.adminUrl + '/readyz')).json()).toEqual({
      status: 'ready',
      checks: { database: 'up', redis: 'absent' },
    });
    expect((await fetch(s.adminUrl + '/nope')).status).toBe(404);
  });
});

describe('/metrics', () => {
  let text = '';
  beforeAll(async () => {
    text = await (await fetch(s.adminUrl + '/metrics')).text();
  });
  it('counts requests by route template, method, status and Envelope A code', () => {
    expect(text).toContain(
      'keygate_requests_total{route="/v2/workspaces/{workspaceId}/tags",method="GET",status="200",code=""} 20',
    );
    expect(text).toContain(
      'keygate_requests_total{route="/v2/workspaces/{workspaceId}/tags",method="GET",status="429",code="150005"} 2',
    );
    expect(text).toMatch(/keygate_requests_total\{route="unmatched",method="GET",status="401",code="150002"\} 5/);
    expect(text).toMatch(/keygate_requests_total\{route="unmatched",method="GET",status="429",code="150006"\} 1/);
  });
  it('counts rate-limit decisions, near-limit, auth failures, cache and upstream latency', () => {
    expect(text).toContain('keygate_rate_limit_decisions_total{layer="key",outcome="accepted"}');
    expect(text).toContain('keygate_rate_limit_decisions_total{layer="key",outcome="rejected"} 2');
    expect(text).toContain('keygate_rate_limit_near_limit_total{layer="key"} 1');
    expect(text).toContain('keygate_auth_failures_total{kind="invalid_key"} 5');
    expect(text).toContain('keygate_auth_failures_total{kind="cooldown"} 1');
    expect(text).toMatch(/keygate_principal_cache_total\{result="hit"\} \d+/);
    expect(text).toMatch(/keygate_upstream_duration_seconds_count \d+/);
    expect(text).toContain('keygate_degraded 0');
  });
  it('never carries a key, an IP or a user id', () => {
    for (const secret of [K.wsAdmin, K.partner, K.ownerPk, 'S'.repeat(40)])
      expect(text).not.toContain(secret.slice(7, 20));
    expect(text).not.toMatch(/10\.5\.0\./);
    expect(text).not.toMatch(/user(_?id)?="/i);
    expect(text).not.toMatch(/key(_?id)?="/i);
  });
});

describe('logs', () => {
  it('hold no secret, session token or Authorization value', () => {
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of [
      K.wsAdmin,
      K.partner,
      K.ownerPk,
      K.session,
      'S'.repeat(40),
      s.gatewaySecret,
      s.internalToken,
    ]) {
      expect(logs).not.toContain(secret);
    }
    expect(logs).not.toMatch(/Bearer /);
  });
  it('hold an allow-listed access line per request (ACCESS_LOG, at info)', () => {
    flushAccessLines();
    const lines = logs
      .split('\n')
      .filter((l) => l.includes('"msg":"request"'))
      .map((l) => JSON.parse(l));
    expect(lines.length).toBeGreaterThan(20);
    expect(Object.keys(lines[0]).sort()).toEqual(
      [
        'c',
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
      ].sort(),
    );
  });
  it('redact secrets even when a caller logs them by mistake', () => {
    let out = '';
    const log = createLogger(
      'info',
      new Writable({
        write(c, _e, cb) {
          out += c;
          cb();
        },
      }),
    );
    log.info(
      { req: { headers: { authorization: 'Bearer svc_ws_x', cookie: 'session=abc' } }, secret: 'svc_pk_y', token: 't' },
      'oops',
    );
    expect(out).not.toMatch(/svc_ws_x|svc_pk_y|session=abc/);
    expect(out).toContain('[redacted]');
  });
});

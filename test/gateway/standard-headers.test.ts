// The IETF draft's rate-limit fields beside X-RateLimit-* (draft-ietf-httpapi-ratelimit-headers), and
// CORS for browser clients (CORS_ORIGINS): preflights answered by the gateway without a key, without
// spending, never forwarded.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K } from '../fixtures/seed.js';

const clock = new FakeClock();
let s: Stack;
let rec: Recorder;
beforeAll(async () => {
  rec = await startRecorder();
  s = await startStack({
    clock,
    mode: 'gateway',
    upstreamUrl: rec.url,
    env: { CORS_ORIGINS: 'https://app.example.com' },
  });
});
afterAll(async () => {
  await s?.close();
  await rec?.close();
});
beforeEach(() => {
  clock.advance(60_000);
  clock.setSecond(18); // 42 s before the window resets
});

/** `"name";r=1;t=2, ...` as { name: { r, t } } (the draft's structured-field list, as written here). */
function items(field: string | null): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const item of (field ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const [name, ...params] = item.split(';');
    out[JSON.parse(name)] = Object.fromEntries(params.map((p) => p.split('=')).map(([k, v]) => [k, Number(v)]));
  }
  return out;
}

describe('RateLimit-Policy and RateLimit', () => {
  it('name one policy per layer and agree with X-RateLimit-*', async () => {
    const r = await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.60.0.1' });
    expect(r.status).toBe(200);
    expect(items(r.headers.get('ratelimit-policy'))).toEqual({ read: { q: 20, w: 60 }, ip: { q: 100, w: 60 } });
    const now = items(r.headers.get('ratelimit'));
    expect(now.read.r).toBe(Number(r.headers.get('x-ratelimit-remaining')));
    expect(now.ip.r).toBe(Number(r.headers.get('x-ratelimit-ip-remaining')));
    // X-RateLimit-Reset is an epoch time; the draft's t is seconds until it.
    expect(now.read.t).toBe(Number(r.headers.get('x-ratelimit-reset')) - clock.now() / 1000);
    expect(now.read.t).toBe(42);
  });

  it('on a 429, r is 0 and t is the Retry-After', async () => {
    let r;
    for (let i = 0; i < 21; i++)
      r = await s.request('POST', '/v2/workspaces/100/tags', {
        key: K.wsAdmin,
        ip: '10.60.0.2',
        body: { name: `t${i}` },
      });
    expect(r!.status).toBe(429);
    const now = items(r!.headers.get('ratelimit'));
    expect(now.write.r).toBe(0);
    expect(now.write.t).toBe(Number(r!.headers.get('retry-after')));
  });

  it('before a key is resolved only the address policy is named; /v1 names its partner policy', async () => {
    const r = await s.request('GET', '/v2/workspaces/100/tags', { ip: '10.60.0.3' });
    expect(r.status).toBe(401);
    expect(Object.keys(items(r.headers.get('ratelimit-policy')))).toEqual(['ip']);
    const v1 = await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip: '10.60.0.4' });
    expect(items(v1.headers.get('ratelimit-policy'))).toEqual({ partner: { q: 20, w: 60 } });
    expect(items(v1.headers.get('ratelimit')).partner.r).toBe(Number(v1.headers.get('x-ratelimit-remaining')));
  });
});

describe('CORS (CORS_ORIGINS)', () => {
  const preflight = (origin: string, headers = 'authorization, content-type') =>
    fetch(`${s.gatewayUrl}/v2/workspaces/100/tags`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': headers,
        'x-forwarded-for': '10.61.0.1',
      },
    });

  it('a preflight from an allowed origin is answered without a key, spends nothing, is not forwarded', async () => {
    const before = rec.seen.length;
    const r = await preflight('https://app.example.com');
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(r.headers.get('access-control-allow-methods')).toContain('POST');
    expect(r.headers.get('access-control-allow-headers')).toContain('authorization');
    expect(rec.seen.length).toBe(before);
    const status = await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.61.0.1' });
    expect(status.body.data.ip.used).toBe(0);
    expect(status.body.data.buckets.write.used).toBe(0);
  });

  it('a preflight from another origin, or asking for another header, gets no Allow-* field', async () => {
    for (const r of [await preflight('https://evil.example'), await preflight('https://app.example.com', 'x-secret')]) {
      expect(r.status).toBe(204);
      expect(r.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it('answers to an allowed origin, refusals included, expose the rate-limit fields', async () => {
    const ok = await s.request('GET', '/v2/workspaces/100/tags', {
      key: K.wsAdmin,
      ip: '10.61.0.2',
      headers: { origin: 'https://app.example.com' },
    });
    const refused = await s.request('GET', '/v2/workspaces/100/tags', {
      ip: '10.61.0.2',
      headers: { origin: 'https://app.example.com' },
    });
    for (const r of [ok, refused]) {
      expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(r.headers.get('access-control-expose-headers')).toMatch(/Retry-After.*|RateLimit/);
    }
    const other = await s.request('GET', '/v2/workspaces/100/tags', {
      key: K.wsAdmin,
      ip: '10.61.0.3',
      headers: { origin: 'https://evil.example' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

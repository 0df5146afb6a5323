import { describe, expect, it } from 'vitest';
import { pathProblem } from '../../src/gateway/path.js';
import { isIP } from 'node:net';
import { createHmac } from 'node:crypto';
import { sign } from '../../src/http/identity.js';
import { clientIp, ipv4Value, TrustedProxies } from '../../src/http/client-ip.js';
import { retryAfter } from '../../src/gateway/headers.js';

describe('pathProblem', () => {
  it.each([
    '/v2/workspaces/100/accounts',
    '/v2/workspaces/9999999999999999/x',
    '/v1/workspaces/g-1_a/preview',
    '/v2/workspaces/quotas',
  ])('%s is canonical', (p) => {
    expect(pathProblem(p)).toBeNull();
  });
  it.each([
    '',
    'v2/x',
    '/v2//x',
    '/v2/x/',
    '/v2/./x',
    '/v2/../x',
    '/v2/%2E%2E/x',
    '/v2/a%2Fb',
    '/v2/a%5cb',
    '/v2/a\\b',
    '/v2/01',
    '/v2/1e3',
    '/v2/-1',
    '/v2/+1',
    '/v2/0',
    '/v2/12345678901234567',
    '/v2/%',
    '/v2/%00',
  ])('%j is refused', (p) => {
    expect(pathProblem(p)).not.toBeNull();
  });
});

describe('clientIp', () => {
  const t = new TrustedProxies(['127.0.0.1', '10.0.0.0/8', '::1']);
  it('uses the socket address when the peer is not trusted', () => {
    expect(clientIp('192.0.2.1', '1.1.1.1', t)).toBe('192.0.2.1');
    expect(clientIp('::ffff:192.0.2.1', undefined, t)).toBe('192.0.2.1');
  });
  it('takes the right-most untrusted X-Forwarded-For address from a trusted peer', () => {
    expect(clientIp('127.0.0.1', '1.1.1.1, 2.2.2.2, 10.1.2.3', t)).toBe('2.2.2.2');
    expect(clientIp('::1', '2001:db8::1', t)).toBe('2001:db8::1');
    expect(clientIp('127.0.0.1', ['1.1.1.1', '3.3.3.3'], t)).toBe('3.3.3.3');
    expect(clientIp('127.0.0.1', '10.0.0.1, 10.0.0.2', t)).toBe('10.0.0.1');
  });
  it('falls back to the socket address on a malformed header', () => {
    expect(clientIp('127.0.0.1', '1.1.1.1, bogus', t)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', '', t)).toBe('127.0.0.1');
    // A blank element is not 0.0.0.0 (one bucket shared by every such request).
    expect(clientIp('127.0.0.1', '   ', t)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', '1.1.1.1, , 2.2.2.2', t)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', 'bogus', t)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', ' 2.2.2.2 ', t)).toBe('2.2.2.2');
    expect(clientIp('127.0.0.1', '10.1.1.1', t)).toBe('10.1.1.1');
  });
  it('refuses a bad TRUST_PROXY entry', () => {
    expect(() => new TrustedProxies(['10.0.0.0/33'])).toThrow(/TRUST_PROXY/);
    expect(() => new TrustedProxies(['example.com'])).toThrow(/TRUST_PROXY/);
  });
});

describe('ipv4Value', () => {
  it('accepts exactly what net.isIP calls IPv4, with the right value', () => {
    const samples = [
      '1.2.3.4',
      '0.0.0.0',
      '255.255.255.255',
      '256.1.1.1',
      '01.2.3.4',
      '1.2.3',
      '1.2.3.4.5',
      '1..2.3',
      ' 1.2.3.4',
      'a.b.c.d',
      '10.0.0.01',
      '1.2.3.4.',
      '.1.2.3.4',
      '1234.1.1.1',
      '::1',
      '::ffff:1.2.3.4',
      '',
    ];
    // And a few thousand near-misses: random octets, leading zeros, wrong separators.
    let seed = 7;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 5000; i++) {
      const parts = Array.from({ length: 3 + rnd(3) }, () => (rnd(5) === 0 ? '0' : '') + String(rnd(300)));
      samples.push(parts.join(rnd(40) === 0 ? ',' : '.'));
    }
    for (const s of samples) {
      const v = ipv4Value(s);
      expect(v >= 0, s).toBe(isIP(s) === 4);
      if (v >= 0) expect(v, s).toBe(s.split('.').reduce((a, o) => a * 256 + Number(o), 0));
    }
  });
  it('matches trusted IPv4 subnets, including /0 and /32', () => {
    const t = new TrustedProxies(['10.0.0.0/8', '192.168.1.7', '172.16.0.0/12']);
    expect([
      t.has('10.255.0.1'),
      t.has('11.0.0.1'),
      t.has('192.168.1.7'),
      t.has('192.168.1.8'),
      t.has('172.31.255.255'),
      t.has('172.32.0.0'),
    ]).toEqual([true, false, true, false, true, false]);
    expect(new TrustedProxies(['0.0.0.0/0']).has('203.0.113.9')).toBe(true);
    expect(new TrustedProxies(['0.0.0.0/0']).has('2001:db8::1')).toBe(false);
  });
});

describe('retryAfter', () => {
  it('is the seconds left in the window, at least 1', () => {
    expect(retryAfter({ limit: 1, used: 2, remaining: 0, reset: 120 }, 75_000)).toBe(45);
    expect(retryAfter({ limit: 1, used: 2, remaining: 0, reset: 120 }, 119_999)).toBe(1);
    expect(retryAfter({ limit: 1, used: 2, remaining: 0, reset: 120 }, 120_000)).toBe(1);
  });
});

describe('sign', () => {
  it('is the hex HMAC-SHA256 (docs/decisions.md section 5) of timestamp, request id, method, target and identity', () => {
    const identity = Buffer.from(JSON.stringify({ keyId: 1, scopes: ['tags:read'], note: 'é' })).toString('base64url');
    const expected = createHmac('sha256', 'the-gateway-secret')
      .update(['1795380900123', 'req-1', 'GET', '/v2/workspaces/1/tags?limit=5', identity].join('\n'))
      .digest('hex');
    expect(sign('the-gateway-secret', '1795380900123', 'req-1', 'GET', '/v2/workspaces/1/tags?limit=5', identity)).toBe(
      expected,
    );
  });
});

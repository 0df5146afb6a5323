// TRUST_PROXY matching (src/http/client-ip.ts, node:net's BlockList) against the arithmetic of a subnet:
// an address is in `net/prefix` when its first `prefix` bits are the network's.
import { describe, expect, it } from 'vitest';
import { ipv4Value, TrustedProxies } from '../../src/http/client-ip.js';

const inSubnet = (ip: string, net: string, prefix: number) => {
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  return (ipv4Value(ip) & mask) >>> 0 === (ipv4Value(net) & mask) >>> 0;
};

describe('TrustedProxies', () => {
  it('trusts an IPv4 address exactly when one of the subnets holds it, in every spelling it is asked in', () => {
    let seed = 11;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const quad = () => Array.from({ length: 4 }, () => (rnd(4) === 0 ? 10 : rnd(256))).join('.');
    for (let round = 0; round < 50; round++) {
      const subnets = Array.from({ length: 1 + rnd(3) }, () => ({ net: quad(), prefix: rnd(33) }));
      const t = new TrustedProxies(subnets.map((s) => `${s.net}/${s.prefix}`));
      for (let i = 0; i < 40; i++) {
        const ip = i < subnets.length ? subnets[i].net : quad();
        const expected = subnets.some((s) => inSubnet(ip, s.net, s.prefix));
        expect(t.has(ip), `${ip} in ${JSON.stringify(subnets)}`).toBe(expected);
        expect(t.has(`::ffff:${ip}`), `::ffff:${ip}`).toBe(expected);
        // Asked twice: the remembered answer is the same.
        expect(t.has(ip)).toBe(expected);
      }
    }
  });

  it('keeps the families apart: IPv4 subnets never hold an IPv6 address, nor IPv6 subnets an IPv4 one', () => {
    const t = new TrustedProxies(['0.0.0.0/0', 'fd00::/8']);
    expect(t.has('203.0.113.9')).toBe(true);
    expect(t.has('fd12::1')).toBe(true);
    expect(t.has('2001:db8::1')).toBe(false);
    expect(new TrustedProxies(['::/0']).has('203.0.113.9')).toBe(false);
    expect(new TrustedProxies(['::/0']).has('2001:db8::1')).toBe(true);
    expect(t.has('not-an-address')).toBe(false);
  });
});

// addressKey: the client an address is counted as (IPv4 address, or IPv6 /64), and plainAddress:
// an IPv4-mapped IPv6 address as its IPv4 address.
import { describe, expect, it } from 'vitest';
import { addressKey, plainAddress } from '../../src/http/address.js';
import { clientIp, TrustedProxies } from '../../src/http/client-ip.js';

describe('addressKey', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts an IPv6 address as its /64, one spelling for every spelling', () => {
    const same = [
      '2001:db8:1:2::',
      '2001:db8:1:2::1',
      '2001:db8:1:2:ffff:ffff:ffff:ffff',
      '2001:DB8:1:2:A:B:C:D',
      '2001:0db8:0001:0002:0000:0000:0000:0001',
      '2001:db8:1:2:0:0:0.0.0.1',
      'fe80::1%eth0'.replace('fe80::1', '2001:db8:1:2::1'),
    ];
    for (const address of same) expect(addressKey(address)).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressKey('2001:db8::7')).toBe('2001:db8::/64');
    expect(addressKey('::1')).toBe('::/64');
    expect(addressKey('1:2:3:4:5:6:7:8')).toBe('1:2:3:4::/64');
    expect(addressKey('1:0:0:4::')).toBe('1:0:0:4::/64');
    expect(addressKey('0:0:1:0::')).toBe('0:0:1::/64');
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address, in any spelling', () => {
    for (const mapped of [
      '::ffff:192.0.2.1',
      '::FFFF:192.0.2.1',
      '0:0:0:0:0:ffff:192.0.2.1',
      '::ffff:c000:201',
      '0::ffff:c000:0201',
    ]) {
      expect(addressKey(mapped)).toBe('192.0.2.1');
      expect(plainAddress(mapped)).toBe('192.0.2.1');
    }
    // IPv4-compatible and NAT64 addresses are IPv6 ones.
    expect(addressKey('::192.0.2.1')).toBe('::/64');
    expect(addressKey('64:ff9b::192.0.2.1')).toBe('64:ff9b::/64');
    expect(plainAddress('64:ff9b::192.0.2.1')).toBe('64:ff9b::192.0.2.1');
  });

  it('leaves what is not an address alone', () => {
    for (const junk of ['', 'not-an-ip', '1:2:3', 'gggg::1']) expect(addressKey(junk)).toBe(junk);
  });
});

describe('clientIp and mapped spellings', () => {
  it('sees the IPv4 address whichever spelling the socket or X-Forwarded-For uses', () => {
    const trusted = new TrustedProxies(['127.0.0.1']);
    for (const spelling of [
      '::ffff:198.51.100.4',
      '::FFFF:198.51.100.4',
      '0:0:0:0:0:ffff:198.51.100.4',
      '::ffff:c633:6404',
    ]) {
      expect(clientIp(spelling, undefined, trusted)).toBe('198.51.100.4');
      expect(clientIp('127.0.0.1', spelling, trusted)).toBe('198.51.100.4');
      expect(
        clientIp(spelling.replace('198.51.100.4', '127.0.0.1').replace('c633:6404', '7f00:1'), spelling, trusted),
      ).toBe('198.51.100.4');
    }
    expect(clientIp('2001:db8::5', undefined, trusted)).toBe('2001:db8::5');
  });
});

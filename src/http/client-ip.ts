// The client IP of docs/decisions.md section 3: the socket address, unless it lies in TRUST_PROXY; then the
// right-most X-Forwarded-For address that is not itself trusted. A malformed header falls back to
// the socket address.
import { BlockList, isIP } from 'node:net';
import { LRUCache } from 'lru-cache';
import { parseCidr } from '../config/cidr.js';
import { plainAddress } from './address.js';

/** The 32-bit value of a dotted-quad IPv4 address as net.isIP accepts it (no leading zeros), or -1. */
export function ipv4Value(s: string): number {
  const n = s.length;
  if (n < 7 || n > 15) return -1;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i <= n; i++) {
    const c = i === n ? 46 : s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || octet > 255) return -1;
      value = value * 256 + octet;
      if (i < n && ++dots > 3) return -1;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits === 1 && octet === 0) return -1; // a leading zero
      octet = octet * 10 + (c - 48);
      if (++digits > 3) return -1;
    } else return -1;
  }
  return dots === 3 ? value : -1;
}

const isAddress = (s: string) => ipv4Value(s) >= 0 || isIP(s) !== 0;

export class TrustedProxies {
  /** The TRUST_PROXY subnets of each family: an address is matched against those of its own family. */
  private v4 = new BlockList();
  private v6 = new BlockList();
  readonly empty: boolean;

  constructor(cidrs: string[]) {
    for (const c of cidrs) {
      const { address, family, prefix } = parseCidr(c);
      if (family === 4) this.v4.addSubnet(address, prefix, 'ipv4');
      else this.v6.addSubnet(address, prefix, 'ipv6');
    }
    this.empty = cidrs.length === 0;
  }

  /** Answers per address are remembered: BlockList.check allocates on every call (microseconds). */
  private seen = new LRUCache<string, boolean>({ max: 10_000 });

  has(ip: string): boolean {
    let trusted = this.seen.get(ip);
    if (trusted === undefined) this.seen.set(ip, (trusted = this.match(ip)));
    return trusted;
  }

  private match(ip: string): boolean {
    // An IPv4-mapped IPv6 address meets the IPv4 subnets, as BlockList would match it.
    const v4 = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
    if (ipv4Value(v4) >= 0) return this.v4.check(v4, 'ipv4');
    return isIP(ip) === 6 && this.v6.check(ip, 'ipv6');
  }
}

/**
 * An IPv4-mapped IPv6 address is its IPv4 client, in any spelling (`::ffff:1.2.3.4`, `::FFFF:102:304`,
 * `0:0:0:0:0:ffff:1.2.3.4`), so every layer (cooldown, IP rate limit, messages) sees `1.2.3.4`.
 */
export function normalizeIp(ip: string | undefined): string {
  if (!ip) return '0.0.0.0';
  // The spelling Node gives a dual-stack socket's IPv4 peers, without parsing it as IPv6.
  if (ip.startsWith('::ffff:') && ipv4Value(ip.slice(7)) >= 0) return ip.slice(7);
  return plainAddress(ip);
}

export function clientIp(
  socketAddr: string | undefined,
  xff: string | string[] | undefined,
  trusted: TrustedProxies,
): string {
  const peer = normalizeIp(socketAddr);
  if (trusted.empty || !xff || !trusted.has(peer)) return peer;
  // One address (the usual case behind one proxy): it is the client, trusted or not.
  if (typeof xff === 'string' && xff.indexOf(',') === -1) {
    const only = xff.trim();
    if (only === '') return peer;
    const ip = normalizeIp(only);
    return isAddress(ip) ? ip : peer;
  }
  const raw = (Array.isArray(xff) ? xff.join(',') : xff).split(',').map((s) => s.trim());
  // An empty element is malformed too (normalizeIp would read it as 0.0.0.0, one bucket for all).
  if (raw.some((s) => s === '')) return peer;
  const parts = raw.map(normalizeIp);
  if (parts.some((p) => !isAddress(p))) return peer;
  for (let i = parts.length - 1; i >= 0; i--) if (!trusted.has(parts[i])) return parts[i];
  // Every hop is trusted: the left-most is the closest thing to a client we have.
  return parts[0] ?? peer;
}

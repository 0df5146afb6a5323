// The client IP of CONTRACT section 3: the socket address, unless it lies in TRUST_PROXY; then the
// right-most X-Forwarded-For address that is not itself trusted. A malformed header falls back to
// the socket address.
import { BlockList, isIP } from 'node:net';

export class TrustedProxies {
  private list = new BlockList();
  readonly empty: boolean;

  constructor(cidrs: string[]) {
    for (const c of cidrs) {
      const [addr, bits] = c.split('/');
      const family = isIP(addr);
      if (!family) throw new Error(`TRUST_PROXY: ${JSON.stringify(c)} is not an address or CIDR`);
      const type = family === 4 ? 'ipv4' : 'ipv6';
      const max = family === 4 ? 32 : 128;
      const prefix = bits === undefined ? max : Number(bits);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (bits !== undefined && !/^\d+$/.test(bits))) {
        throw new Error(`TRUST_PROXY: ${JSON.stringify(c)} has an invalid prefix length`);
      }
      this.list.addSubnet(addr, prefix, type);
    }
    this.empty = cidrs.length === 0;
  }

  /** Answers per address are remembered (a bounded map): BlockList.check allocates on every call. */
  private seen = new Map<string, boolean>();

  has(ip: string): boolean {
    let v = this.seen.get(ip);
    if (v !== undefined) return v;
    const family = isIP(ip);
    v = family ? this.list.check(ip, family === 4 ? 'ipv4' : 'ipv6') : false;
    if (this.seen.size >= 10_000) this.seen.clear();
    this.seen.set(ip, v);
    return v;
  }
}

/** `::ffff:1.2.3.4` is the IPv4 client 1.2.3.4. */
export function normalizeIp(ip: string | undefined): string {
  if (!ip) return '0.0.0.0';
  return ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}

export function clientIp(socketAddr: string | undefined, xff: string | string[] | undefined, trusted: TrustedProxies): string {
  const peer = normalizeIp(socketAddr);
  if (trusted.empty || !xff || !trusted.has(peer)) return peer;
  const parts = (Array.isArray(xff) ? xff.join(',') : xff).split(',').map((s) => normalizeIp(s.trim()));
  if (parts.some((p) => !isIP(p))) return peer;
  for (let i = parts.length - 1; i >= 0; i--) if (!trusted.has(parts[i])) return parts[i];
  // Every hop is trusted: the left-most is the closest thing to a client we have.
  return parts[0] ?? peer;
}

// Which client an address stands for, where the gateway counts per client address (the failed-
// authentication cooldown and the IP rate-limit layer of docs/decisions.md section 3). An IPv4 address is one
// client. An IPv6 client is given a whole /64 by its provider (RFC 6177, RFC 7421) and may pick any
// address inside it, so counting per address would give it 2^64 sets of tries: it is counted per /64.
// An IPv4-mapped IPv6 address (::ffff:a.b.c.d, RFC 4291 section 2.5.5.2) is the IPv4 client itself.
import { isIP } from 'node:net';

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail and a zone index allowed), or null. */
export function ipv6Groups(address: string): number[] | null {
  const zone = address.indexOf('%');
  let text = zone === -1 ? address : address.slice(0, zone);
  if (isIP(text) !== 6) return null;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const [a, b, c, d] = text
      .slice(lastColon + 1)
      .split('.')
      .map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const gap = text.indexOf('::');
  const head = gap === -1 ? text : text.slice(0, gap);
  const tail = gap === -1 ? '' : text.slice(gap + 2);
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const zeros = gap === -1 ? [] : Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].map((group) => parseInt(group, 16));
}

/** The dotted IPv4 address an IPv4-mapped IPv6 address stands for, or null for any other. */
function mappedIpv4(groups: number[]): string | null {
  if (groups[5] !== 0xffff || groups.slice(0, 5).some((group) => group !== 0)) return null;
  return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`;
}

/** RFC 5952's spelling: lower-case hex without leading zeros, the longest run of 2+ zero groups as `::`. */
function formatIpv6(groups: number[]): string {
  let runStart = -1;
  let runLength = 0;
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === 0) length++;
    if (length > runLength && length >= 2) [runStart, runLength] = [start, length];
  }
  const hex = groups.map((group) => group.toString(16));
  if (runStart === -1) return hex.join(':');
  return `${hex.slice(0, runStart).join(':')}::${hex.slice(runStart + runLength).join(':')}`;
}

/** An IPv4-mapped IPv6 address as its IPv4 address (any spelling); every other address unchanged. */
export function plainAddress(ip: string): string {
  if (!ip.includes(':')) return ip;
  const groups = ipv6Groups(ip);
  return (groups && mappedIpv4(groups)) ?? ip;
}

/**
 * The client an address is counted as: an IPv4 address unchanged (also when spelled IPv4-mapped), an
 * IPv6 address as its /64 in RFC 5952 spelling (`2001:db8:1:2::/64`), the same for every spelling of
 * every address in it. Anything else (not an address) is returned unchanged.
 */
export function addressKey(ip: string): string {
  if (!ip.includes(':')) return ip;
  const groups = ipv6Groups(ip);
  if (groups === null) return ip;
  return mappedIpv4(groups) ?? `${formatIpv6([...groups.slice(0, 4), 0, 0, 0, 0])}/64`;
}

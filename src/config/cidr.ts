// An address or CIDR of a setting (TRUST_PROXY), checked once here for the settings and for the
// gateway's matcher alike, so the configuration layer needs nothing from the gateway.
import { isIP } from 'node:net';

export interface Cidr {
  address: string;
  family: 4 | 6;
  prefix: number;
}

/** `10.0.0.0/8`, `::1`, `fd00::/8`: throws an Error naming the entry when it is not one. */
export function parseCidr(entry: string): Cidr {
  const parts = entry.split('/');
  const [address, bits] = parts;
  const family = isIP(address);
  if (!family || parts.length > 2) throw new Error(`TRUST_PROXY: ${JSON.stringify(entry)} is not an address or CIDR`);
  const max = family === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (bits !== undefined && !/^\d+$/.test(bits))) {
    throw new Error(`TRUST_PROXY: ${JSON.stringify(entry)} has an invalid prefix length`);
  }
  return { address, family: family as 4 | 6, prefix };
}

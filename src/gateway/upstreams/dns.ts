// Where a configured target URL points: an IP literal is one address, a host name is looked up (the
// system's resolver, or UPSTREAM_DNS_SERVER's) and gives one target per address, so the pods behind a
// Kubernetes headless Service become targets as they come and go.
import dns from 'node:dns';
import net from 'node:net';

export type Resolve = (host: string) => Promise<string[]>;

/** A configured target URL, taken apart once. */
export interface ParsedTarget {
  /** `http:` or `https:`. */
  protocol: string;
  /** The host name, or the IP literal without brackets. */
  hostname: string;
  /** Explicit or the scheme's default. */
  port: number;
  /** What the URL's origin writes after the host ('' for the scheme's default port). */
  portSuffix: string;
  /** True when `hostname` is an IP address: nothing to resolve. */
  literal: boolean;
  /** The Host the service expects: the URL's own `host:port` (port omitted when default). */
  authority: string;
  /** The URL's path without its trailing slash ('' for none). */
  basePath: string;
}

export function parseTarget(url: string): ParsedTarget {
  const u = new URL(url);
  const hostname = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return {
    protocol: u.protocol,
    hostname,
    port,
    portSuffix: u.port ? `:${u.port}` : '',
    literal: net.isIP(hostname) !== 0,
    authority: u.host,
    basePath: u.pathname.replace(/\/+$/, ''),
  };
}

/**
 * The name TLS asks for at a target's address (SNI, and the certificate checked against it): the host of
 * the configured URL's authority (`host:port`), or undefined when that is an IP literal.
 */
export function tlsNameOf(authority: string): string | undefined {
  const host = authority[0] === '[' ? authority.slice(1, authority.indexOf(']')) : authority.replace(/:\d+$/, '');
  return net.isIP(host) === 0 ? host : undefined;
}

/** An address as it is written in a URL or a key: IPv6 in brackets. */
export function bracketed(address: string): string {
  return net.isIPv6(address) ? `[${address}]` : address;
}

/** The connect origin for one address of a parsed target (`http://10.0.0.5:9000`). */
export function originFor(t: ParsedTarget, address: string): string {
  return `${t.protocol}//${bracketed(address)}${t.portSuffix}`;
}

/** A target's key: `address:port`, IPv6 in brackets. */
export function keyFor(address: string, port: number): string {
  return `${bracketed(address)}:${port}`;
}

/** Addresses compared as sets: order and repeats in an answer are no change. */
export function normalizeAddresses(addresses: readonly string[]): string[] {
  return [...new Set(addresses)].sort();
}

// A DNS server that does not answer is asked twice, a second then two (c-ares doubles the timeout):
// a refresh that fails keeps the last addresses, so a short bound costs nothing.
const RESOLVER_TIMEOUT_MS = 1000;
const RESOLVER_TRIES = 2;

/**
 * The lookup of host names: the system's (getaddrinfo, /etc/hosts included) without `server`, else
 * that DNS server (`host:port`, UPSTREAM_DNS_SERVER) asked for A and AAAA records.
 */
export function resolverFor(server?: string): Resolve {
  if (!server) {
    return async (host) => (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
  }
  const resolver = new dns.promises.Resolver({ timeout: RESOLVER_TIMEOUT_MS, tries: RESOLVER_TRIES });
  resolver.setServers([server]);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
    if (addresses.length > 0) return addresses;
    // Neither family answered: the IPv4 query's error names the cause (ENOTFOUND, ETIMEOUT...).
    if (v4.status === 'rejected') throw v4.reason;
    if (v6.status === 'rejected') throw v6.reason;
    return [];
  };
}

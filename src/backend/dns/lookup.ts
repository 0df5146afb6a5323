// Live DNS checks of a sending domain through node:dns, with a configurable resolver (DNS_RESOLVER,
// `host:port`) so tests can point it at a local DNS server.
import { Resolver } from 'node:dns/promises';

export type CheckResult = 'pass' | 'fail' | 'missing';

export interface DomainChecks {
  domain: string;
  spf: CheckResult;
  dkim: CheckResult;
  dmarc: CheckResult;
  mx: CheckResult;
}

const NOT_FOUND = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN', 'ESERVFAIL', 'EREFUSED']);

export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/** A resolver bound to `server` (host:port) or the system's; short timeouts so a check never hangs. */
export function makeResolver(server?: string): Resolver {
  const resolver = new Resolver({ timeout: 1500, tries: 1 });
  if (server) resolver.setServers([server]);
  return resolver;
}

async function txt(resolver: Resolver, name: string): Promise<string[] | null> {
  try {
    return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch (err) {
    if (NOT_FOUND.has((err as NodeJS.ErrnoException).code ?? '')) return null;
    throw err;
  }
}

/**
 * SPF: a `v=spf1` TXT record that does not end in `+all`. DMARC: `v=DMARC1` at `_dmarc`, `fail` when
 * its policy is missing. DKIM: a `v=DKIM1` key at `<selector>._domainkey` (selectors tried in order).
 * MX: at least one MX record. Lookup errors other than "no such record" are thrown (the caller
 * decides whether a check ran).
 */
export async function checkDomain(
  domain: string,
  server?: string,
  selectors = ['default', 'google', 'selector1', 'k1'],
): Promise<DomainChecks> {
  const resolver = makeResolver(server);
  const [spfTxt, dmarcTxt, mx] = await Promise.all([
    txt(resolver, domain),
    txt(resolver, `_dmarc.${domain}`),
    resolver.resolveMx(domain).catch((err) => {
      if (NOT_FOUND.has((err as NodeJS.ErrnoException).code ?? '')) return [];
      throw err;
    }),
  ]);
  const spfRec = spfTxt?.find((t) => t.toLowerCase().startsWith('v=spf1'));
  const spf: CheckResult = !spfRec
    ? 'missing'
    : /[+]?all\s*$/i.test(spfRec) && !/[-~?]all\s*$/i.test(spfRec)
      ? 'fail'
      : 'pass';
  const dmarcRec = dmarcTxt?.find((t) => t.toUpperCase().startsWith('V=DMARC1'));
  const dmarc: CheckResult = !dmarcRec ? 'missing' : /;\s*p=(none|quarantine|reject)/i.test(dmarcRec) ? 'pass' : 'fail';
  let dkim: CheckResult = 'missing';
  for (const sel of selectors) {
    const rec = (await txt(resolver, `${sel}._domainkey.${domain}`))?.find((t) => /v=DKIM1/i.test(t) || /p=/.test(t));
    if (rec) {
      dkim = /p=[A-Za-z0-9+/=]{16,}/.test(rec) ? 'pass' : 'fail';
      break;
    }
  }
  return { domain, spf, dkim, dmarc, mx: mx.length > 0 ? 'pass' : 'missing' };
}

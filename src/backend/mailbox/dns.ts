// Live DNS checks of an account's sending domain, kept as the account's last check, and the setup
// score built from them.
import { ApiError } from '../../http/errors.js';
import { checkDomain, domainOf, type DomainChecks } from '../dns/index.js';
import type { BackendServices } from '../services.js';
import { storeDnsCheck } from './queries.js';

export interface AccountDns extends DomainChecks {
  checkedAt: Date;
}

/** Run the live lookup and store it as the account's last check. Throws 503 when DNS cannot answer. */
export async function liveDns(svc: BackendServices, accountId: number, emailAddress: string): Promise<AccountDns> {
  const domain = domainOf(emailAddress);
  let checks: DomainChecks;
  try {
    checks = await checkDomain(domain, svc.config.dnsResolver);
  } catch (err) {
    svc.log.warn({ err: (err as Error).message, domain }, 'dns lookup failed');
    throw new ApiError('service_unavailable', `The DNS lookup of ${domain} failed; try again later.`, { domain });
  }
  const checkedAt = new Date(svc.clock.now());
  await storeDnsCheck(svc.db, accountId, checks, checkedAt);
  return { ...checks, checkedAt };
}

/** DNS "passes" for the automatic start of partner-OAuth mailboxes: SPF, DKIM, DMARC and MX all pass. */
export function dnsPasses(checks: DomainChecks): boolean {
  return checks.spf === 'pass' && checks.dkim === 'pass' && checks.dmarc === 'pass' && checks.mx === 'pass';
}

/** Points of the setup score (sum 100): each DNS check that passes, and the send-and-receive check. */
export const SETUP_SCORE_WEIGHTS = { spf: 20, dkim: 20, dmarc: 15, mx: 15, verification: 30 } as const;

export function setupScore(checks: DomainChecks, verification: string): number {
  const weights = SETUP_SCORE_WEIGHTS;
  return (
    (checks.spf === 'pass' ? weights.spf : 0) +
    (checks.dkim === 'pass' ? weights.dkim : 0) +
    (checks.dmarc === 'pass' ? weights.dmarc : 0) +
    (checks.mx === 'pass' ? weights.mx : 0) +
    (verification === 'passed' ? weights.verification : 0)
  );
}

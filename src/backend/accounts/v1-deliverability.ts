// /v1 deliverability: setup score (cached; refresh recomputes), live DNS health, and the
// deliverability score of a date range by recipient ESP.
import { isIP } from 'node:net';
import { ApiError } from '../../http/errors.js';
import type { Row } from '../../db/types.js';
import { parse, type Ctx, type Reply, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { checkDomain, domainOf, makeResolver, type DomainChecks } from '../dns/index.js';
import { accountIdParam, checkRange, emptyBody, loadAccount, orgOf, rate } from '../mailbox/index.js';
import { deliverabilityBody } from './v1-schemas.js';
import { cachedSetupScore, deliverabilityByEsp, storeSetupScore, type Listing, type SetupChecks } from './queries.js';

/** Domain and IP blocklists queried by TXT: a TXT answer is a listing, NXDOMAIN/NODATA is none. */
export const DOMAIN_BLOCKLISTS = ['dbl.spamhaus.org', 'multi.surbl.org', 'multi.uribl.com'];
export const IP_BLOCKLISTS = ['zen.spamhaus.org', 'bl.spamcop.net', 'b.barracudacentral.org'];
/** Weights of the consolidated score; only the checks that ran count toward the total. */
const WEIGHTS = { spf: 25, dkim: 25, dmarc: 20, mx: 10, domainBlacklist: 10, ipBlacklist: 10 };
const NOT_FOUND = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

/** Query each list; a list that errors (timeout, refusal, an open-resolver answer) did not run. Null when none ran. */
async function blocklist(
  resolver: ReturnType<typeof makeResolver>,
  name: string,
  zones: string[],
): Promise<Listing | null> {
  const results = await Promise.all(
    zones.map(async (zone) => {
      try {
        const txt = (await resolver.resolveTxt(`${name}.${zone}`)).map((c) => c.join(''));
        // Public lists answer open resolvers with an error text rather than a listing.
        if (txt.some((t) => /open resolver|error|blocked/i.test(t))) return null;
        return txt.length > 0;
      } catch (err) {
        return NOT_FOUND.has((err as NodeJS.ErrnoException).code ?? '') ? false : null;
      }
    }),
  );
  const ran = results.filter((r): r is boolean => r !== null);
  if (!ran.length) return null;
  return { listed: ran.filter(Boolean).length, notListed: ran.filter((r) => !r).length };
}

/** The IPv4 address the mailbox sends from, when known: the SMTP host of an SMTP mailbox. */
async function sendingIp(resolver: ReturnType<typeof makeResolver>, account: Row): Promise<string | null> {
  const host = account.smtp?.host;
  if (typeof host !== 'string') return null;
  if (isIP(host) === 4) return host;
  try {
    return (await resolver.resolve4(host))[0] ?? null;
  } catch {
    return null;
  }
}

export async function computeSetupScore(svc: BackendServices, account: Row): Promise<SetupChecks> {
  const domain = domainOf(account.email_address);
  const resolver = makeResolver(svc.config.dnsResolver);
  let checks: DomainChecks | null = null;
  try {
    checks = await checkDomain(domain, svc.config.dnsResolver);
  } catch (err) {
    svc.log.warn({ err: (err as Error).message, emailAccountId: account.id }, 'setup-score DNS checks did not run');
  }
  const ip = await sendingIp(resolver, account);
  const [domainListing, ipListing] = await Promise.all([
    blocklist(resolver, domain, DOMAIN_BLOCKLISTS),
    ip ? blocklist(resolver, ip.split('.').reverse().join('.'), IP_BLOCKLISTS) : Promise.resolve(null),
  ]);
  const result: SetupChecks = {
    spf: checks ? checks.spf === 'pass' : null,
    dkim: checks ? checks.dkim === 'pass' : null,
    dmarc: checks ? checks.dmarc === 'pass' : null,
    mx: checks ? checks.mx === 'pass' : null,
    domain: domainListing,
    ip: ipListing,
    score: 0,
  };
  let earned = 0;
  let possible = 0;
  for (const check of ['spf', 'dkim', 'dmarc', 'mx'] as const) {
    if (result[check] === null) continue;
    possible += WEIGHTS[check];
    if (result[check]) earned += WEIGHTS[check];
  }
  for (const [field, listed] of [
    ['domainBlacklist', result.domain],
    ['ipBlacklist', result.ip],
  ] as const) {
    if (!listed) continue;
    possible += WEIGHTS[field];
    earned += (WEIGHTS[field] * listed.notListed) / (listed.listed + listed.notListed);
  }
  result.score = possible ? Math.round((100 * earned) / possible) : 0;
  return result;
}

/** The setup-score response: a check that has not run is omitted, not false. */
function setupView(row: Row) {
  const out: Record<string, unknown> = { emailAccountId: row.account_id, emailAccountScore: row.score };
  for (const check of ['spf', 'dkim', 'dmarc', 'mx'] as const) if (row[check] !== null) out[check] = row[check];
  if (row.ip_listed !== null) out.ipBlacklist = { listed: row.ip_listed, notListed: row.ip_not_listed };
  if (row.domain_listed !== null) out.domainBlacklist = { listed: row.domain_listed, notListed: row.domain_not_listed };
  out.updatedAt = new Date(row.updated_at).toISOString();
  if (row.manual_last_refreshed_at) out.manualLastRefreshedAt = new Date(row.manual_last_refreshed_at).toISOString();
  return out;
}

/** Cache rows older than this are recomputed by the accounts job (jobs.ts), so GET stays current without a manual refresh. */
export const SETUP_SCORE_MAX_AGE_MS = 24 * 3600_000;

const dayStart = (d: string) => new Date(`${d}T00:00:00Z`);
const dayAfter = (d: string) => new Date(Date.parse(`${d}T00:00:00Z`) + 86_400_000);

/** The /v1 routes of an account's setup score, DNS health and deliverability score (v1 spec). */
export function register(router: Router): void {
  router.get('/v1/setup-score/{emailAccountId}', getSetupScore);
  router.post('/v1/setup-score/{emailAccountId}/refresh', refreshSetupScore);
  router.get('/v1/dns-health/{emailAccountId}', getDnsHealth);
  router.post('/v1/deliverability-score/{emailAccountId}', deliverabilityScore);
}

async function getSetupScore(ctx: Ctx): Promise<Reply> {
  const account = await loadAccount(ctx.db, orgOf(ctx), accountIdParam(ctx));
  const cached = await cachedSetupScore(ctx.db, account.id);
  if (cached) return { data: setupView(cached) };
  // Read-through on the first read: the cache is filled once, later GETs serve it.
  const checks = await computeSetupScore(ctx.svc, account);
  return { data: setupView(await storeSetupScore(ctx.db, account.id, checks, ctx.svc.clock.now(), false)) };
}

async function refreshSetupScore(ctx: Ctx): Promise<Reply> {
  if (ctx.body !== undefined) parse(emptyBody, ctx.body);
  const account = await loadAccount(ctx.db, orgOf(ctx), accountIdParam(ctx));
  const checks = await computeSetupScore(ctx.svc, account);
  return { data: setupView(await storeSetupScore(ctx.db, account.id, checks, ctx.svc.clock.now(), true)) };
}

async function getDnsHealth(ctx: Ctx): Promise<Reply> {
  const account = await loadAccount(ctx.db, orgOf(ctx), accountIdParam(ctx));
  const domain = domainOf(account.email_address);
  let checks: DomainChecks;
  try {
    checks = await checkDomain(domain, ctx.svc.config.dnsResolver);
  } catch (err) {
    throw new ApiError('service_unavailable', `The DNS lookup of ${domain} failed; try again.`, {
      domain,
      reason: (err as NodeJS.ErrnoException).code ?? 'error',
    });
  }
  // A live lookup: cachedAt is when it ran.
  return {
    data: {
      emailAccountId: account.id,
      domain,
      spf: checks.spf,
      dkim: checks.dkim,
      dmarc: checks.dmarc,
      mx: checks.mx,
      cachedAt: new Date(ctx.svc.clock.now()).toISOString(),
    },
  };
}

async function deliverabilityScore(ctx: Ctx): Promise<Reply> {
  const org = orgOf(ctx);
  const id = accountIdParam(ctx);
  const body = parse(deliverabilityBody, ctx.body ?? {});
  checkRange(body.startDate, body.endDate, ['startDate', 'endDate']);
  await loadAccount(ctx.db, org, id);
  const rows = await deliverabilityByEsp(
    ctx.db,
    id,
    dayStart(body.startDate),
    dayAfter(body.endDate),
    new Date(ctx.svc.clock.now()),
  );
  return { data: { emailAccountId: id, ...deliverabilityOf(rows, body.esps) } };
}

/** The totals over the ESPs asked for, then each ESP's own counts (zeros for one with no message). */
export function deliverabilityOf(
  rows: readonly { esp: string; sent: number; inbox: number; spam: number }[],
  esps: readonly string[],
): Record<string, unknown> {
  const by = new Map(rows.map((r) => [r.esp, r]));
  let sent = 0,
    inbox = 0,
    spam = 0;
  const per: Record<string, unknown> = {};
  for (const esp of esps) {
    const counts = by.get(esp) ?? { sent: 0, inbox: 0, spam: 0 };
    sent += counts.sent;
    inbox += counts.inbox;
    spam += counts.spam;
    per[esp] = {
      deliverabilityRate: rate(counts.inbox, counts.sent),
      sentCount: counts.sent,
      inboxCount: counts.inbox,
      spamCount: counts.spam,
    };
  }
  return {
    totalDeliverabilityRate: rate(inbox, sent),
    totalSentCount: sent,
    totalInboxCount: inbox,
    totalSpamInboxCount: spam,
    ...per,
  };
}

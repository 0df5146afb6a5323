// DNS checks of a sending domain (SPF, DKIM, DMARC, MX), used by the mailbox views and /v1 deliverability.
export { checkDomain, domainOf, makeResolver, type CheckResult, type DomainChecks } from './lookup.js';

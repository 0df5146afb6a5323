// The mailbox rules the accounts and warmup domains (and analytics, tags, oauth) share: the account
// record and reply-rate view, the warmup bands, the DNS checks, the /v1 account views and the SQL behind
// them. It imports no domain, so every domain may import it without a cycle.
export { WARMUP_MIN_LIMIT, accountRecord, getAccount, replyRateView, type ReplyRateView } from './record.js';
export { ACCOUNT_COLUMNS, ORG_ACCOUNTS, getAccountById, settleDueLimits } from './queries.js';
export { SETUP_SCORE_WEIGHTS, dnsPasses, liveDns, setupScore, type AccountDns } from './dns.js';
export * from './v1-views.js';
export { emptyBody, idList, notFoundItem } from './v1-schemas.js';

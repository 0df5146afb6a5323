// What other domains use from accounts: loading an account of a workspace, its record and reply-rate
// views, due lowered limits, its DNS checks, and the /v1 views of the partner interface.
export { ACCOUNT_COLUMNS, WARMUP_MIN_LIMIT, accountRecord, getAccount, getAccountById, replyRateView, settleDueLimits } from './store.js';
export { dnsPasses, liveDns } from './dns.js';
export { ORG_ACCOUNTS, accountIdParam, loadAccount, loadAccounts, notFound, orgOf, scoresOf, settle, warmupStatusOf } from './v1-views.js';
export { checkRange, rate } from './v1-deliverability.js';

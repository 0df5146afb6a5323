// What other domains use from warmup: the plan-change cap (PATCH /internal/organizations/{id}), the
// partner OAuth automatic start, the ESP mapping, the band table, the organization's plan behind a
// workspace, and cancelling the planned sends of mailboxes that stop.
export { applyPlanCap, applyDueLimits, nextLocalMidnight } from './limits.js';
export { partnerOauthConnected, tryAutoStart, recordVerification, type AutoStartResult } from './lifecycle.js';
export { senderEspOf } from './activity.js';
export { bandsFrom, parseBands, type Bands, type Band } from './bands.js';
export { orgOfWorkspace, type OrgPlan } from './org.js';
export { cancelPendingSends } from './schedule.js';

// Warmup of a mailbox: its settings, starting and pausing, the planned sends, lowered limits that take
// effect at local midnight, and the /v1 warmup routes. Below, what other domains use from warmup: the
// partner OAuth automatic start, the ESP mapping, the organization's plan behind a workspace, and
// cancelling the planned sends of mailboxes that stop.
import type { BackendDomain } from '../domain.js';
import { jobs } from './jobs.js';
import { register as registerV2 } from './routes.js';
import { schemas as schemasV2 } from './schemas.js';
import { register as registerV1 } from './v1-routes.js';
import { schemas as schemasV1 } from './v1-schemas.js';
import { seed } from './seed.js';

export const warmup: BackendDomain = {
  name: 'warmup',
  register(router, svc) {
    registerV2(router, svc);
    registerV1(router);
  },
  jobs,
  schemas: { ...schemasV2, ...schemasV1 },
  seed,
};

export { applyDueLimits } from './limits.js';
export { cancelPendingSends, nextLocalMidnight } from './queries.js';
export { partnerOauthConnected, tryAutoStart, recordVerification, type AutoStartResult } from './lifecycle.js';
export { senderEspOf } from './activity.js';
export { orgOfWorkspace, type OrgPlan } from './org.js';

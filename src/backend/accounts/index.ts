// Mailboxes of a workspace (/v2) and of a partner's organization (/v1): connecting, listing, tagging,
// status changes, deletion, and the /v1 setup and deliverability scores. What other domains share
// with accounts lives below both, in ../mailbox/.
import type { BackendDomain } from '../domain.js';
import { jobs } from './jobs.js';
import { register as registerV2 } from './routes.js';
import { schemas as schemasV2 } from './schemas.js';
import { register as registerDeliverability } from './v1-deliverability.js';
import { register as registerV1 } from './v1-routes.js';
import { schemas as schemasV1 } from './v1-schemas.js';
import { seed } from './seed.js';

export const accounts: BackendDomain = {
  name: 'accounts',
  register(router) {
    registerV2(router);
    registerV1(router);
    registerDeliverability(router);
  },
  jobs,
  schemas: { ...schemasV2, ...schemasV1 },
  seed,
};

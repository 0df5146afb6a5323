// Sending and warmup analytics: the /v2 overview and leaderboard, the /v1 dashboard and reports.
import type { BackendDomain } from '../domain.js';
import { register as registerV2 } from './routes.js';
import { schemas as schemasV2 } from './schemas.js';
import { register as registerV1 } from './v1-routes.js';
import { schemas as schemasV1 } from './v1-schemas.js';

export const analytics: BackendDomain = {
  name: 'analytics',
  register(router, svc) {
    registerV2(router, svc);
    registerV1(router);
  },
  schemas: { ...schemasV2, ...schemasV1 },
};

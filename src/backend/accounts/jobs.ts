// The accounts domain's jobs: setup scores (v1 spec, setup score) older than a day are recomputed, so
// GET /v1/setup-score stays current without a manual refresh.
import type { Job } from '../domain.js';
import type { BackendServices } from '../services.js';
import { SETUP_SCORE_MAX_AGE_MS, computeSetupScore } from './v1-deliverability.js';
import { staleSetupScoreAccounts, storeSetupScore } from './queries.js';

export function jobs(svc: BackendServices): Job[] {
  return [
    {
      name: 'v1.refresh-setup-scores',
      intervalMs: 60 * 60_000,
      async run() {
        const now = svc.clock.now();
        const stale = await staleSetupScoreAccounts(svc.db, new Date(now - SETUP_SCORE_MAX_AGE_MS));
        for (const account of stale)
          await storeSetupScore(svc.db, account.id, await computeSetupScore(svc, account), svc.clock.now(), false);
      },
    },
  ];
}

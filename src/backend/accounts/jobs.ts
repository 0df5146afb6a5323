// The accounts domain's jobs: setup scores (v1 spec, setup score) older than a day are recomputed, so
// GET /v1/setup-score stays current without a manual refresh.
import type { Job } from '../jobs.js';
import type { BackendServices } from '../services.js';
import { SETUP_SCORE_MAX_AGE_MS, computeSetupScore, storeSetupScore } from './v1-deliverability.js';

export function jobs(svc: BackendServices): Job[] {
  return [
    {
      name: 'v1.refresh-setup-scores',
      intervalMs: 60 * 60_000,
      async run() {
        const now = svc.clock.now();
        const stale = await svc.db.query(
          `SELECT a.* FROM v1_setup_scores s JOIN accounts a ON a.id = s.account_id
            WHERE s.updated_at < $1 ORDER BY s.updated_at LIMIT 200`,
          [new Date(now - SETUP_SCORE_MAX_AGE_MS)],
        );
        for (const a of stale) await storeSetupScore(svc.db, a.id, await computeSetupScore(svc, a), svc.clock.now(), false);
      },
    },
  ];
}

// Daily limits: a lowered warmupMaxLimit waits for the mailbox's next local midnight (spec, States: "Daily
// limit"). A plan change lowers every mailbox above the new cap at once: src/access/service/plan-cap.ts.
import type { Queryable } from '../../db/index.js';
import { settleDueLimits } from '../mailbox/index.js';

/** The job's work: every pending lowered max whose local midnight has come takes effect. */
export async function applyDueLimits(db: Queryable, now: Date): Promise<number[]> {
  return settleDueLimits(db, now);
}

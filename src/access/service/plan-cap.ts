// What a plan change does to the organization's mailboxes (spec, States: "Daily limit"): none may stay
// above the new plan's per-mailbox cap. It runs in the plan change's transaction (organizations.ts);
// the backend's warmup rules then read the limits it leaves, so it lives here, below both.
import type { Queryable } from '../../db/types.js';
import { lowerMailboxesToCap } from './queries.js';

/**
 * Inside the caller's transaction (the plan change), lower at once every mailbox of the organization
 * whose max, current or pending limit is above the new per-mailbox cap; a pending max that would no
 * longer be below the new max is dropped. `cap` null (no cap) changes nothing. Returns how many
 * mailboxes changed.
 */
export async function applyPlanCap(db: Queryable, orgId: number, cap: number | null): Promise<number> {
  if (cap === null) return 0;
  if (!Number.isInteger(cap) || cap < 5)
    throw new Error(`applyPlanCap: cap must be an integer >= 5 or null, got ${cap}`);
  return lowerMailboxesToCap(db, orgId, cap);
}

// Steps 5 and 6: the organization's plan has API access, and its subscription is not paused. A paused
// organization is refused on every call, reads included (docs/decisions.md section 3).
import type { Principal } from '../../access/principal.js';
import type { Refusal } from '../refusal.js';

export function organizationGuard(principal: Principal): Refusal | null {
  if (!principal.apiAccess) return { code: '150007' };
  if (principal.paused) return { code: '040006' };
  return null;
}

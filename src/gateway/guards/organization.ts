// Steps 5 and 6: the organization's plan has API access, and its subscription is not paused.
import { organizationDenial } from '../../access/authorize.js';
import type { Principal } from '../../access/principal.js';
import type { Refusal } from '../refusals.js';

export function organizationGuard(principal: Principal): Refusal | null {
  const code = organizationDenial(principal);
  return code ? { code } : null;
}

// Steps 8 to 10: the path workspace is the key's (or one its user belongs to) and not deleted; the
// key holds the route's scope; the role the key acts at reaches the scope's minimum role.
import { authorizeRoute, type Granted } from '../../access/authorize.js';
import type { Principal } from '../../access/principal.js';
import type { Refusal } from '../refusals.js';
import type { RouteMatch } from './route.js';

export function permissionGuard(principal: Principal, match: RouteMatch): Refusal | Granted {
  const grant = authorizeRoute(principal, match.route, match.params);
  return typeof grant === 'string' ? { code: grant } : grant;
}

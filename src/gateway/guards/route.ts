// Step 7: the route exists in the route table (config/routes.json); a route missing from it is never
// forwarded.
import type { RouteMatch, RouteTable } from '../../config/routes.js';
import type { Refusal } from '../refusal.js';

export type { RouteMatch };

export function routeGuard(table: RouteTable, method: string, path: string): RouteMatch | Refusal {
  return table.match(method, path) ?? { code: 'not_found', message: `No route ${method} ${path}.` };
}

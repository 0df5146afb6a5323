// Step 7: the route exists in the route table (config/routes.json); a route missing from it is never
// forwarded.
import type { RouteMatch, RouteTable } from '../../config/routes.js';

export type { RouteMatch };

export function routeGuard(table: RouteTable, method: string, path: string): RouteMatch | null {
  return table.match(method, path);
}

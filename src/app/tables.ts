// The plans and routes in force (PLANS_FILE, ROUTES_FILE), and their reload on SIGHUP or a change on disk.
import type { Logger } from 'pino';
import { loadPlans, type Plans } from '../config/plans.js';
import { loadRoutes, type Routes } from '../config/routes.js';
import type { LiveTables } from './types.js';
import { workspaceProfile } from '../config/profile/workspace.js';

export interface ReloadableTables extends LiveTables {
  /** Read both files again; a bad one is refused (logged, false) and the tables in force stay. */
  reload(): boolean;
}

export function loadTables(s: { PLANS_FILE: string; ROUTES_FILE: string }, log: Logger): ReloadableTables {
  let plans: Plans = loadPlans(s.PLANS_FILE);
  let routes: Routes = loadRoutes(s.ROUTES_FILE);
  const listeners = new Set<() => void>();
  return {
    plans: () => plans,
    routes: () => routes,
    profile: () => workspaceProfile(routes, plans),
    onReload(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    reload() {
      try {
        const nextPlans = loadPlans(s.PLANS_FILE);
        const nextRoutes = loadRoutes(s.ROUTES_FILE);
        plans = nextPlans;
        routes = nextRoutes;
        log.info({ plans: s.PLANS_FILE, routes: s.ROUTES_FILE }, 'configuration reloaded');
        for (const listener of listeners) listener();
        return true;
      } catch (err) {
        log.error({ err: (err as Error).message }, 'configuration reload refused; the previous files stay in force');
        return false;
      }
    },
  };
}

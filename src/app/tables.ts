// The profile in force (PROFILE_FILE, docs/profiles.md) with its routes and plans (a rest profile's own,
// the workspace profile's PLANS_FILE and ROUTES_FILE), and their reload on SIGHUP or a change on disk.
import type { Logger } from 'pino';
import { loadProfile, type ProfileFiles } from '../config/profile/load.js';
import type { Profile } from '../config/profile/types.js';
import type { LiveTables } from './types.js';

export interface ReloadableTables extends LiveTables {
  /** Read the profile and its files again; a bad one is refused (logged, false) and the profile in force stays. */
  reload(): boolean;
}

export function loadTables(s: ProfileFiles, log: Logger): ReloadableTables {
  // One object until a reload replaces it whole: the gateway reads it per request, and the profile, its
  // routes and its plans always come from one reading of the files.
  let profile: Profile = loadProfile(s);
  const listeners = new Set<() => void>();
  return {
    plans: () => profile.plans,
    routes: () => profile.routes,
    profile: () => profile,
    onReload(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    reload() {
      try {
        profile = loadProfile(s);
        const files = profile.kind === 'workspace' ? { plans: s.PLANS_FILE, routes: s.ROUTES_FILE } : {};
        log.info({ profile: s.PROFILE_FILE, ...files }, 'configuration reloaded');
        for (const listener of listeners) listener();
        return true;
      } catch (err) {
        log.error({ err: (err as Error).message }, 'configuration reload refused; the previous files stay in force');
        return false;
      }
    },
  };
}

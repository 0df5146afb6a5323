// The seed applied at start (SEED_FILE, the demo seed of `start`).
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { AccessStores } from '../limits/types.js';
import type { Profile } from '../config/profile/types.js';

/**
 * The seed `start` applies when SEED_FILE names none: the workspace API's demo seed, under the workspace
 * profile only. Its organizations, workspaces and svc_ keys mean nothing to another profile's API, whose
 * consumers and keys an operator makes (docs/profiles.md).
 */
export function startSeedFile(
  s: { SEED_FILE?: string },
  mode: string,
  profile: Pick<Profile, 'kind'>,
  demoSeed: string,
): string | undefined {
  if (s.SEED_FILE !== undefined) return s.SEED_FILE;
  return mode === 'start' && profile.kind === 'workspace' ? demoSeed : undefined;
}

export async function applyStartSeed(
  db: Db,
  stores: Pick<AccessStores, 'versions'>,
  raw: unknown,
  log: Logger,
): Promise<void> {
  // The domains write their own sections: loaded here even by a gateway alone, when it is given a seed.
  const { applySeed, parseSeed } = await import('../backend/seed.js');
  const orgs = await applySeed(db, parseSeed(raw));
  // Cached principals of these organizations (other instances) must not outlive the seed.
  for (const org of orgs)
    await stores.versions.bump(org).catch(() => log.warn({ org }, 'access version bump after seeding failed'));
}

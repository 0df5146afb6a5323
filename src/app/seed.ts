// The seed applied at start (SEED_FILE, the demo seed of `start`).
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { AccessStores } from '../limits/types.js';
import type { Profile } from '../config/profile/types.js';
import type { KeyProfile } from '../access/key-types.js';

/**
 * The seed `start` applies: SEED_FILE under any profile (its keys of the profile's key types); without it,
 * the workspace API's demo seed, under the workspace profile only. Its organizations, workspaces and svc_
 * keys mean nothing to another profile's API, whose consumers and keys an operator makes or seeds
 * (docs/profiles.md, examples/shop/seed.json).
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
  profile?: KeyProfile,
): Promise<void> {
  // The domains write their own sections: loaded here even by a gateway alone, when it is given a seed.
  const { applySeed, parseSeed } = await import('../backend/seed.js');
  // Its keys are of the profile's key types (a rest profile's consumers: examples/shop/seed.json).
  const orgs = await applySeed(db, parseSeed(raw, 'seed', profile), 'seed', profile);
  // Cached principals of these organizations (other instances) must not outlive the seed.
  for (const org of orgs)
    await stores.versions.bump(org).catch(() => log.warn({ org }, 'access version bump after seeding failed'));
}

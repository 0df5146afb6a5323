// The seed applied at start (SEED_FILE, the demo seed of `start`).
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { AccessStores } from '../limits/types.js';

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

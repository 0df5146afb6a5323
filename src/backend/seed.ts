// The seed file whole (docs/decisions.md section 2): the access sections (src/access/seed.ts) and each domain's
// own (its `seed`, domains.ts), written in one transaction in the order of DOMAINS. Used by
// `keygate seed`, the seed applied at start, and tests.
import { seedLoader } from '../access/seed.js';
import { DOMAINS } from './domains.js';

export type { Seed } from '../access/seed.js';

const loader = seedLoader(DOMAINS.flatMap((domain) => (domain.seed ? [domain.seed] : [])));

/** Parse and check a seed; a ConfigError names the first bad field (`seed apiKeys.0.secret: ...`). */
export const parseSeed = loader.parse;
/** Apply a parsed seed in one transaction (a bad seed changes nothing). Returns the organization ids it touched. */
export const applySeed = loader.apply;

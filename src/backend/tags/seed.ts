// The tags of the seed file (docs/decisions.md section 2), and the accounts' tag assignments (their `tagIds`):
// written after the accounts domain's rows, so both ends of each assignment exist.
import { z } from 'zod';
import { seedId as id, seedRow, seedRows, seedSections } from '../../access/seed.js';
import { deleteAccountTags, insertSeedAccountTag, upsertSeedTag } from './queries.js';

export const seed = seedSections({
  shape: {
    tags: seedRows({ id, workspaceId: id, name: z.string().min(1).max(64) }),
  },
  identityTables: ['tags'],
  async apply(q, seed, step) {
    for (const [i, t] of seed.tags.entries()) {
      await upsertSeedTag(seedRow(step, 'tags', i), t);
    }
    // The accounts section's own rows (src/backend/accounts/seed.ts): only what an assignment needs.
    const accounts = (seed.accounts ?? []) as { id: number; workspaceId: number; tagIds: number[] }[];
    for (const [i, a] of accounts.entries()) {
      await deleteAccountTags(q, a.id);
      for (const tagId of a.tagIds)
        await insertSeedAccountTag(seedRow(step, 'accounts', i), a.id, tagId, a.workspaceId);
    }
  },
});

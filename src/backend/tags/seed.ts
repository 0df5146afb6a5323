// The tags of the seed file (docs/decisions.md section 2), and the accounts' tag assignments (their `tagIds`):
// written after the accounts domain's rows, so both ends of each assignment exist.
import { z } from 'zod';
import { seedId as id, seedRows, seedSections } from '../../access/seed.js';

export const seed = seedSections({
  shape: {
    tags: seedRows({ id, workspaceId: id, name: z.string().min(1).max(64) }),
  },
  identityTables: ['tags'],
  async apply(q, seed, step) {
    for (const [i, t] of seed.tags.entries()) {
      await step(
        'tags',
        i,
        `INSERT INTO tags (id, workspace_id, name) VALUES ($1,$2,$3) ON CONFLICT (id) DO UPDATE SET workspace_id=$2, name=$3`,
        [t.id, t.workspaceId, t.name],
      );
    }
    // The accounts section's own rows (src/backend/accounts/seed.ts): only what an assignment needs.
    const accounts = (seed.accounts ?? []) as { id: number; workspaceId: number; tagIds: number[] }[];
    for (const [i, a] of accounts.entries()) {
      await q.query(`DELETE FROM account_tags WHERE account_id=$1`, [a.id]);
      for (const tagId of a.tagIds) {
        await step(
          'accounts',
          i,
          `INSERT INTO account_tags (account_id, tag_id) SELECT $1, t.id FROM tags t WHERE t.id=$2 AND t.workspace_id=$3`,
          [a.id, tagId, a.workspaceId],
        );
      }
    }
  },
});

// The notifications of the seed file (docs/decisions.md section 2), `minutesAgo` before the seed is applied.
import { z } from 'zod';
import { seedId as id, seedRow, seedRows, seedSections } from '../../access/seed.js';
import { upsertSeedNotification } from './queries.js';

export const seed = seedSections({
  shape: {
    notifications: seedRows({
      id,
      workspaceId: id,
      type: z.string().min(1),
      severity: z.string().min(1),
      category: z.string().min(1),
      title: z.string().min(1),
      body: z.string(),
      emailAccountId: id.optional(),
      read: z.boolean().default(false),
      minutesAgo: z.number().int().min(0).default(0),
    }),
  },
  identityTables: ['notifications'],
  async apply(_q, seed, step) {
    for (const [i, n] of seed.notifications.entries()) {
      await upsertSeedNotification(seedRow(step, 'notifications', i), n);
    }
  },
});

// The mailboxes of the seed file (docs/decisions.md section 2). Their `tagIds` are written by the tags domain,
// once the tags exist (src/backend/tags/seed.ts).
import { z } from 'zod';
import { seedId as id, seedRow, seedRows, seedSections } from '../../access/seed.js';
import { upsertSeedAccount } from './queries.js';

export const seed = seedSections({
  shape: {
    accounts: seedRows({
      id,
      workspaceId: id,
      emailAddress: z.string().email(),
      fromName: z.string().default(''),
      provider: z.string().regex(/^[a-z0-9-]+$/),
      status: z.enum(['active', 'warming', 'paused', 'error', 'auth-expired', 'disconnected']),
      verification: z.enum(['pending', 'passed', 'failed']),
      warmupMaxLimit: z.number().int().min(5),
      warmupCurrentLimit: z.number().int().min(5).optional(),
      replyRateCustom: z.number().min(0).max(100).nullable().default(null),
      timeZone: z.string().min(1).default('UTC'),
      tagIds: z.array(id).default([]),
    }),
  },
  identityTables: ['accounts'],
  async apply(_q, seed, step) {
    for (const [i, a] of seed.accounts.entries()) {
      await upsertSeedAccount(seedRow(step, 'accounts', i), {
        ...a,
        warmupCurrentLimit: Math.min(a.warmupCurrentLimit ?? Math.min(20, a.warmupMaxLimit), a.warmupMaxLimit),
      });
    }
  },
});

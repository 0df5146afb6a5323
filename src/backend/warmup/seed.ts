// Warmup history of the seed file (docs/decisions.md section 2): `perDay` messages a day for `days` days up to
// today, deterministic (the same seed gives the same history relative to today).
import { z } from 'zod';
import { seedId as id, seedRow, seedRows, seedSections } from '../../access/seed.js';
import { deleteWarmupMessages, insertSeedWarmupMessages } from './queries.js';

export const seed = seedSections({
  shape: {
    warmupActivity: seedRows({
      accountId: id,
      days: z.number().int().min(1).max(90),
      perDay: z.number().int().min(1).max(200),
      spamPercent: z.number().int().min(0).max(100).default(5),
      bouncePercent: z.number().int().min(0).max(100).default(2),
      replyPercent: z.number().int().min(0).max(100).default(30),
    }),
  },
  identityTables: [],
  async apply(q, seed, step) {
    for (const [i, w] of seed.warmupActivity.entries()) {
      await deleteWarmupMessages(q, w.accountId);
      await insertSeedWarmupMessages(seedRow(step, 'warmupActivity', i), w);
    }
  },
});

// The mailboxes of the seed file (docs/decisions.md section 2). Their `tagIds` are written by the tags domain,
// once the tags exist (src/backend/tags/seed.ts).
import { z } from 'zod';
import { seedId as id, seedRows, seedSections } from '../../access/seed.js';

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
      await step(
        'accounts',
        i,
        `INSERT INTO accounts (id, workspace_id, email_address, from_name, provider, status, verification, warmup_max_limit,
          warmup_current_limit, reply_rate_custom, time_zone, last_connected_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11, now())
        ON CONFLICT (id) DO UPDATE SET workspace_id=$2, email_address=$3, from_name=$4, provider=$5, status=$6, verification=$7,
          warmup_max_limit=$8, warmup_current_limit=$9, reply_rate_custom=$10, time_zone=$11, updated_at=now()`,
        [
          a.id,
          a.workspaceId,
          a.emailAddress,
          a.fromName,
          a.provider,
          a.status,
          a.verification,
          a.warmupMaxLimit,
          Math.min(a.warmupCurrentLimit ?? Math.min(20, a.warmupMaxLimit), a.warmupMaxLimit),
          a.replyRateCustom,
          a.timeZone,
        ],
      );
    }
  },
});

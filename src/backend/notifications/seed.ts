// The notifications of the seed file (docs/decisions.md section 2), `minutesAgo` before the seed is applied.
import { z } from 'zod';
import { seedId as id, seedRows, seedSections } from '../../access/seed.js';

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
      await step(
        'notifications',
        i,
        `INSERT INTO notifications (id, workspace_id, type, severity, category, title, body, email_account_id, read_at, created_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8, CASE WHEN $9::boolean THEN now() END, now() - make_interval(mins => $10::int))
        ON CONFLICT (id) DO UPDATE SET workspace_id=$2, type=$3, severity=$4, category=$5, title=$6, body=$7, email_account_id=$8,
          read_at = CASE WHEN $9::boolean THEN coalesce(notifications.read_at, now()) END`,
        [
          n.id,
          n.workspaceId,
          n.type,
          n.severity,
          n.category,
          n.title,
          n.body,
          n.emailAccountId ?? null,
          n.read,
          n.minutesAgo,
        ],
      );
    }
  },
});

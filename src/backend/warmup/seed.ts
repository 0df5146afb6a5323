// Warmup history of the seed file (docs/decisions.md section 2): `perDay` messages a day for `days` days up to
// today, deterministic (the same seed gives the same history relative to today).
import { z } from 'zod';
import { seedId as id, seedRows, seedSections } from '../../access/seed.js';

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
      await q.query(`DELETE FROM warmup_messages WHERE account_id=$1`, [w.accountId]);
      await step(
        'warmupActivity',
        i,
        `INSERT INTO warmup_messages (account_id, sent_at, recipient_esp, outcome, replied)
        SELECT $1::int, date_trunc('day', now()) - make_interval(days => d) + make_interval(mins => 30 + n * 7),
          (ARRAY['google','microsoft','other','yahoo'])[1 + ((d * 7 + n * 3 + $1::int) % 4)],
          CASE WHEN ((d * 13 + n * 7 + $1::int) % 100) < $4::int THEN 'spam'
               WHEN ((d * 13 + n * 7 + $1::int) % 100) < $4::int + $5::int THEN 'bounced' ELSE 'inbox' END,
          ((d * 11 + n * 5 + $1::int) % 100) < $6::int
        FROM generate_series(0, $2::int - 1) AS d, generate_series(0, $3::int - 1) AS n`,
        [w.accountId, w.days, w.perDay, w.spamPercent, w.bouncePercent, w.replyPercent],
      );
    }
  },
});

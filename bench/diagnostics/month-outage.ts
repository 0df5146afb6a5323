// Diagnostic (docs/redis.md, A month's counts when Redis loses them): what an organization with a
// monthly quota of 20 is admitted in all when Redis loses the month's counter after 12 were spent,
// through two real gateway programs on one PostgreSQL schema (test/helpers/month-outage.ts): a
// redis-server restarted without persistence, and a Sentinel failover to a replica still
// resynchronising; each `settled` (the loss once the programs' checkpoints, every 200 ms, hold the
// 12), `at-once` (the loss right after the last spend) and `unchecked` (at once, with
// MONTH_CHECKPOINT_MS=300000: the database holds nothing of the month, each program restores what it
// saw itself). Prints one line per run and the admitted counts per scenario.
// Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/diagnostics/month-outage.ts [runs=5] [restart|sentinel|both] [settled|at-once|unchecked|all]
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { openDb, migrate } from '../../src/db/index.js';
import { monthOutage, QUOTA } from '../../test/helpers/month-outage.js';

const pgUrl = process.env.DATABASE_URL;
if (!pgUrl) throw new Error('DATABASE_URL is needed (the programs are other processes)');
const runs = Number(process.argv[2] ?? 5);
const which = process.argv[3] ?? 'both';
const kinds = (which === 'both' ? ['restart', 'sentinel'] : [which]) as ('restart' | 'sentinel')[];
const variants = {
  settled: { settle: true },
  'at-once': { settle: false },
  unchecked: { settle: false, checkpointMs: 300_000 },
};
type Variant = keyof typeof variants;
const when = process.argv[4] ?? 'all';
const chosen = (when === 'all' ? Object.keys(variants) : [when]) as Variant[];

async function admin(sql: string) {
  const c = new pg.Client({ connectionString: pgUrl });
  await c.connect();
  await c.query(sql).finally(() => c.end());
}

const admitted: Record<string, number[]> = {};
for (let n = 0; n < runs; n++) {
  for (const kind of kinds)
    for (const variant of chosen) {
      const schema = `mo_${randomBytes(5).toString('hex')}`;
      const db = await openDb({ databaseUrl: pgUrl, dataDir: 'memory://', schema });
      try {
        await migrate(db);
        const r = await monthOutage(kind, db, pgUrl, variants[variant]);
        console.log(JSON.stringify({ variant, ...r }));
        (admitted[`${kind} ${variant}`] ??= []).push(r.admitted);
      } finally {
        await db.close();
        await admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      }
    }
}
for (const [scenario, counts] of Object.entries(admitted))
  console.log(`${scenario}: admitted ${counts.join(', ')} of a quota of ${QUOTA} (max ${Math.max(...counts)})`);

// Diagnostic (docs/redis.md, "Bounded while Redis is away" and the Cluster section; docs/limits.md):
// what the open-mode fallback admits when Redis is lost, through two real gateway programs on one
// PostgreSQL schema (test/helpers/fallback-bound.ts): a key of 20 a minute with and without a monthly
// quota on its organization, a monthly quota of 10 spent before the kill (a redis-server killed), and
// one address of 100 a minute whose counter lives on a Cluster primary killed (its replica promoted).
// Prints one line per run and the admitted counts per kind, against the budget plus one per program.
// Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/diagnostics/fallback-bound.ts [runs=5] [kind,kind...]
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { openDb, migrate } from '../../src/db/index.js';
import { fallbackBound, PROGRAMS, type FallbackKind } from '../../test/helpers/fallback-bound.js';

const pgUrl = process.env.DATABASE_URL;
if (!pgUrl) throw new Error('DATABASE_URL is needed (the programs are other processes)');
const runs = Number(process.argv[2] ?? 5);
const kinds = (process.argv[3]?.split(',') ?? [
  'minute-none',
  'minute-quota',
  'month-spent',
  'cluster',
]) as FallbackKind[];

async function admin(sql: string) {
  const c = new pg.Client({ connectionString: pgUrl });
  await c.connect();
  await c.query(sql).finally(() => c.end());
}

const admitted: Record<string, { budget: number; counts: number[] }> = {};
for (let n = 0; n < runs; n++) {
  for (const kind of kinds) {
    const schema = `fb_${randomBytes(5).toString('hex')}`;
    const db = await openDb({ databaseUrl: pgUrl, dataDir: 'memory://', schema });
    try {
      await migrate(db);
      const r = await fallbackBound(kind, db, pgUrl);
      console.log(JSON.stringify(r));
      if (!r.oneMinute) continue; // the minute turned mid-run: its counters started again
      (admitted[kind] ??= { budget: r.budget, counts: [] }).counts.push(r.admitted);
    } finally {
      await db.close();
      await admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  }
}
for (const [kind, { budget, counts }] of Object.entries(admitted))
  console.log(
    `${kind}: admitted ${counts.join(', ')} of ${budget} (bound ${budget + PROGRAMS}; max ${Math.max(...counts)})`,
  );

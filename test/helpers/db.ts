// A migrated database per test file: a schema of its own on the PostgreSQL server when DATABASE_URL
// is set (CI), else an in-memory PGlite.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDb, migrate, type Db } from '../../src/db/index.js';

export async function openTestDb(opts: { forcePglite?: boolean; url?: string; queryTimeoutMs?: number } = {}): Promise<Db & { drop(): Promise<void> }> {
  const url = opts.forcePglite ? undefined : (opts.url ?? process.env.DATABASE_URL);
  const schema = url ? `t_${randomBytes(6).toString('hex')}` : 'public';
  const db = await openDb({ databaseUrl: url, dataDir: 'memory://', schema, queryTimeoutMs: opts.queryTimeoutMs });
  await migrate(db);
  return Object.assign(db, {
    async drop() {
      await db.close();
      if (url) {
        const c = new pg.Client({ connectionString: process.env.DATABASE_URL ?? url });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
      }
    },
  });
}

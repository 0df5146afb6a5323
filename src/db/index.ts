import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Db } from './types.js';

export type { Db, Queryable, Row } from './types.js';

export async function openDb(opts: {
  databaseUrl?: string;
  dataDir?: string;
  schema?: string;
  queryTimeoutMs?: number;
}): Promise<Db> {
  // Each driver is loaded only when used: PGlite (WebAssembly PostgreSQL) alone costs ~45 MB of RSS.
  if (opts.databaseUrl) return (await import('./pg.js')).openPg(opts.databaseUrl, opts.schema, opts.queryTimeoutMs);
  return (await import('./pglite.js')).openPglite(opts.dataDir ?? 'memory://');
}

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/**
 * Apply every SQL file of src/db/migrations not yet recorded in schema_migrations, in name order,
 * each in its own transaction under an advisory lock so concurrent starts apply each file once.
 */
export async function migrate(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  // Under the advisory lock: replicas starting at once on an empty database must not race here.
  await db.tx(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock(7355608)');
    await q.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
  });
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  const applied: string[] = [];
  for (const name of files) {
    const sql = readFileSync(join(dir, name), 'utf8');
    const did = await db.tx(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock(7355608)');
      const seen = await q.query('SELECT 1 FROM schema_migrations WHERE name = $1', [name]);
      if (seen.length) return false;
      for (const stmt of splitSql(sql)) await q.query(stmt);
      await q.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
      return true;
    });
    if (did) applied.push(name);
  }
  return applied;
}

/**
 * Split a migration into statements: on `;` at the end of a line, except inside $$ bodies
 * (functions). Migrations are written one statement per `;`-terminated line group.
 */
export function splitSql(sql: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inDollar = false;
  for (const line of sql.split('\n')) {
    if (/^\s*--/.test(line) && !inDollar) continue;
    cur += line + '\n';
    const dollars = line.match(/\$\$/g)?.length ?? 0;
    if (dollars % 2 === 1) inDollar = !inDollar;
    if (!inDollar && /;\s*$/.test(line)) {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
    }
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

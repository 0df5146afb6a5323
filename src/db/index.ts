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
 * each as one script in its own transaction under an advisory lock so concurrent starts apply each
 * file once.
 * A database already up to date is only read: a role that owns nothing (deploy/README.md, Two database
 * roles) starts on it; with files pending, such a role stops with a line saying who must apply them.
 */
export async function migrate(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  const [{ present }] = await db.query(`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`);
  if (present) {
    const seen = new Set((await db.query('SELECT name FROM schema_migrations')).map((r) => r.name));
    if (files.every((f) => seen.has(f))) return [];
  }
  try {
    return await applyMigrations(db, dir, files);
  } catch (err) {
    // 42501: insufficient_privilege (CREATE refused in the schema, or not the owner of a table);
    // 3F000: no schema to create in (the role may not even use the one on its search path).
    if (['42501', '3F000'].includes((err as { code?: string }).code ?? ''))
      throw new Error(
        `migrations are pending and this database role may not apply them (${(err as Error).message}); run \`keygate migrate\` as the role that owns the schema`,
      );
    throw err;
  }
}

async function applyMigrations(db: Db, dir: string, files: string[]): Promise<string[]> {
  // Under the advisory lock: replicas starting at once on an empty database must not race here.
  await db.tx(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock(7355608)');
    await q.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
  });
  const applied: string[] = [];
  for (const name of files) {
    const sql = readFileSync(join(dir, name), 'utf8');
    const did = await db.tx(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock(7355608)');
      const seen = await q.query('SELECT 1 FROM schema_migrations WHERE name = $1', [name]);
      if (seen.length) return false;
      await q.exec(sql);
      await q.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
      return true;
    });
    if (did) applied.push(name);
  }
  return applied;
}

/** Whether the connected role owns the schema's tables (it migrated them, or may). */
export async function ownsSchema(db: Db): Promise<boolean> {
  const [{ owns }] = await db.query(
    `SELECT coalesce(pg_has_role(current_user, c.relowner, 'USAGE'), false) AS owns
       FROM (SELECT to_regclass('audit_chain') AS oid) t LEFT JOIN pg_class c ON c.oid = t.oid`,
  );
  return owns === true;
}

/**
 * What the owner records after migrating (migration 091): the audit retention the purge may never go
 * below, and, with a role for the programs (DATABASE_APP_ROLE), that role's grants on every table as
 * the migrations left them (keygate_grant_app).
 */
export async function recordOwnerSettings(db: Db, s: { auditRetentionDays?: number; appRole?: string }): Promise<void> {
  if (s.auditRetentionDays !== undefined)
    await db.query('UPDATE audit_chain SET retention_days = $1', [s.auditRetentionDays]);
  if (s.appRole !== undefined) await db.query('SELECT keygate_grant_app($1)', [s.appRole]);
}

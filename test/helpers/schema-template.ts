// vitest globalSetup: migrate once per run, copy per test database. With DATABASE_URL set, the
// migrations run once into a template schema, pg_dump writes that schema out as SQL, and the template
// is dropped again; openTestDb (test/helpers/db.ts) then creates each file's schema by running that
// SQL under the file's schema name, in one round trip instead of one transaction per migration.
// Without pg_dump (or when it refuses this server's version) each test database is migrated as before.
// A PGlite DATA_DIR is migrated once into a folder, and each PGlite of the run (a file's openTestDb
// without DATABASE_URL or with forcePglite, a program's DATA_DIR: pgliteDataDir in test/helpers/db.ts)
// starts on a copy of it:
// PGlite's initdb and the migrations cost some 3 s of CPU each, copying 40 MB a fraction of that.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate, openDb } from '../../src/db/index.js';

export interface SchemaTemplate {
  /** The template's schema name, to be replaced by the new schema's name everywhere in `sql`. */
  name: string;
  /** pg_dump's SQL for the migrated template schema: its DDL and its rows (schema_migrations). */
  sql: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    schemaTemplate: SchemaTemplate | null;
    /** A migrated PGlite DATA_DIR to copy (runs without DATABASE_URL), or null. */
    pgliteTemplate: string | null;
  }
}

export default async function setup(project: TestProject) {
  const url = process.env.DATABASE_URL;
  // The PGlite template is made with DATABASE_URL set too: files that test PGlite beside PostgreSQL
  // (openTestDb({ forcePglite })) and programs on a PGlite DATA_DIR start from a copy then as well.
  // Both are made at once: the dump mostly waits on the server, PGlite's migrations on the CPU.
  const [template, pglite] = await Promise.all([url ? dumpMigratedSchema(url) : null, migratedPgliteDir()]);
  project.provide('schemaTemplate', template);
  project.provide('pgliteTemplate', pglite);
  return () => {
    if (pglite) rmSync(pglite, { recursive: true, force: true });
  };
}

async function migratedPgliteDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'kg-pglite-template-'));
  const db = await openDb({ dataDir: dir });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
  return dir;
}

async function dumpMigratedSchema(url: string): Promise<SchemaTemplate | null> {
  // A name that occurs nowhere else in the dump, so replacing it renames exactly the schema.
  const name = `keygate_template_${randomBytes(8).toString('hex')}`;
  const db = await openDb({ databaseUrl: url, schema: name });
  try {
    await migrate(db);
    const dump = execFileSync(
      'pg_dump',
      ['--dbname', url, '--schema', name, '--no-owner', '--no-privileges', '--inserts'],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    // pg_dump's psql meta-commands (\restrict ...) are not SQL.
    const sql = dump
      .split('\n')
      .filter((line) => !line.startsWith('\\'))
      .join('\n');
    if (!sql.includes(`CREATE SCHEMA ${name};`)) throw new Error('pg_dump wrote no schema');
    return { name, sql };
  } catch (err) {
    console.warn(
      `schema template: ${(err as Error).message.split('\n')[0]}; each test database runs the migrations instead`,
    );
    return null;
  } finally {
    await db.close();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`).finally(() => admin.end());
  }
}

// A migrated database per test file: a schema of its own on the PostgreSQL server when DATABASE_URL
// is set (CI), else a PGlite on a copy of the run's migrated DATA_DIR (pgliteDataDir). On PostgreSQL
// the schema is a copy of the template that test/helpers/schema-template.ts migrated once for the run
// (the migrations run here only when there is no template).
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { openDb, migrate, type Db } from '../../src/db/index.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

export async function openTestDb(
  opts: { forcePglite?: boolean; url?: string; queryTimeoutMs?: number } = {},
): Promise<Db & { drop(): Promise<void> }> {
  const url = opts.forcePglite ? undefined : (opts.url ?? process.env.DATABASE_URL);
  const schema = url ? `t_${randomBytes(6).toString('hex')}` : 'public';
  const template = url ? inject('schemaTemplate') : null;
  // On a connection of its own: pg_dump's SQL empties that session's search_path.
  if (url && template) await adminQuery(url, template.sql.replaceAll(template.name, schema));
  const dataDir = url ? undefined : pgliteDataDir();
  const db = await openDb({ databaseUrl: url, dataDir, schema, queryTimeoutMs: opts.queryTimeoutMs });
  if (!(url && template)) await migrate(db);
  return Object.assign(db, {
    async drop() {
      await db.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      if (url) await adminQuery(process.env.DATABASE_URL ?? url, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
  });
}

/**
 * A PGlite DATA_DIR of its own, already migrated: a copy of the folder the run's global setup migrated
 * (test/helpers/schema-template.ts), for openTestDb or a program's DATA_DIR. PGlite's initdb and the
 * migrations are some 3 s of CPU each time; the copy a fraction. An empty folder where there is no
 * template (the global setup did not run): PGlite then runs initdb there, and the program its migrations.
 * The caller removes it.
 */
export function pgliteDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kg-pglite-'));
  const template = inject('pgliteTemplate');
  if (template) cpSync(template, dir, { recursive: true });
  return dir;
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(sql).finally(() => client.end());
}

/**
 * A test database reached through a TCP pass-through the test can cut and restore: PostgreSQL "going
 * away" without touching the server other files share. Needs `url` (a real PostgreSQL).
 */
export async function openCuttableTestDb(
  url: string,
  queryTimeoutMs: number,
): Promise<{ db: Db & { drop(): Promise<void> }; proxy: TcpProxy; close(): Promise<void> }> {
  const target = new URL(url);
  const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
  target.host = `127.0.0.1:${proxy.port}`;
  const db = await openTestDb({ url: target.toString(), queryTimeoutMs });
  return {
    db,
    proxy,
    async close() {
      await proxy.restore();
      await db.drop();
      await proxy.close();
    },
  };
}

export interface RoleSchema {
  schema: string;
  owner: string;
  app: string;
  /** The schema's owner (migrations), the role that owns nothing (the programs), and the superuser of `url`. */
  ownerUrl: string;
  appUrl: string;
  superUrl: string;
  drop(): Promise<void>;
}

/**
 * The two roles of deploy/README.md ("Two database roles") on a schema of their own: `owner` owns the
 * schema (and whatever its migrations create), `app` owns nothing and holds what `keygate migrate`
 * grants it. Each URL puts the schema on the search path. Needs a real PostgreSQL and a superuser `url`.
 */
export async function openRoleSchema(url: string): Promise<RoleSchema> {
  const id = randomBytes(5).toString('hex');
  const [schema, owner, app] = [`t_${id}`, `kg_owner_${id}`, `kg_app_${id}`];
  await adminQuery(
    url,
    `CREATE ROLE ${owner} LOGIN; CREATE ROLE ${app} LOGIN; CREATE SCHEMA ${schema} AUTHORIZATION ${owner}`,
  );
  const as = (user: string | null) => {
    const u = new URL(url);
    if (user) {
      u.username = user;
      u.password = '';
    }
    u.searchParams.set('options', `-c search_path=${schema}`);
    return u.toString();
  };
  return {
    schema,
    owner,
    app,
    ownerUrl: as(owner),
    appUrl: as(app),
    superUrl: as(null),
    async drop() {
      await adminQuery(
        url,
        `DROP SCHEMA IF EXISTS ${schema} CASCADE; DROP ROLE IF EXISTS ${app}; DROP ROLE IF EXISTS ${owner}`,
      );
    },
  };
}

/**
 * Move the oldest `n` rows of the audit trail `days` back and re-seal the chain, as a superuser can
 * (the trail still verifies): the database stamps each new row with its own time, so a test cannot
 * write an old one. `q` must be a superuser's (the suite's own connection is).
 */
export async function ageAuditTrail(q: Pick<Db, 'query'>, n: number, days: number): Promise<void> {
  await q.query(
    `DO $$
     DECLARE r record; prev text;
     BEGIN
       SET LOCAL session_replication_role = replica;
       UPDATE audit_events SET at = at - make_interval(days => ${Number(days)})
        WHERE id IN (SELECT id FROM audit_events ORDER BY id LIMIT ${Number(n)});
       SELECT anchor_hash INTO prev FROM audit_chain;
       FOR r IN SELECT id FROM audit_events ORDER BY id LOOP
         UPDATE audit_events SET prev_hash = prev WHERE id = r.id;
         UPDATE audit_events e SET hash = keygate_audit_hash(e) WHERE e.id = r.id RETURNING e.hash INTO prev;
       END LOOP;
       UPDATE audit_chain SET head_hash = prev;
     END $$`,
  );
}

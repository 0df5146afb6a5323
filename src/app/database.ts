// The database of startApp: opened (unless a test hands one in) and migrated.
import { openDb, migrate, ownsSchema, recordOwnerSettings, type Db } from '../db/index.js';
import { settingError } from '../config/errors.js';
import type { AppSettings } from './types.js';

/** The setting a database failure names: DATABASE_URL, or DATA_DIR for the embedded PGlite. */
function databaseSetting(s: AppSettings): [string, { url?: string; path?: string }] {
  return s.DATABASE_URL ? ['DATABASE_URL', { url: s.DATABASE_URL }] : ['DATA_DIR', { path: s.DATA_DIR }];
}

/**
 * Open and migrate. An unreachable database stops the start with one line naming DATABASE_URL (or DATA_DIR).
 * A program connected as the schema's owner (one database role) also records the audit retention as
 * `keygate migrate` does (src/db/index.ts recordOwnerSettings), when it is the program that purges.
 */
export async function openAppDb(s: AppSettings, injected?: Db, purges = true): Promise<Db> {
  const [setting, where] = databaseSetting(s);
  const db =
    injected ??
    (await openDb({ databaseUrl: s.DATABASE_URL, dataDir: s.DATA_DIR, queryTimeoutMs: s.DB_QUERY_TIMEOUT_MS }).catch(
      (err): never => {
        throw settingError(setting, err, where);
      },
    ));
  const migrated = async () => {
    await migrate(db);
    if (purges && (await ownsSchema(db))) await recordOwnerSettings(db, { auditRetentionDays: s.AUDIT_RETENTION_DAYS });
  };
  await migrated().catch(async (err) => {
    if (!injected) await db.close().catch(() => {});
    throw settingError(setting, err, where);
  });
  return db;
}

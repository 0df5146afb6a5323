import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PGlite, types } from '@electric-sql/pglite';
import { ConfigError } from '../config/errors.js';
import type { Db, Row } from './types.js';

const parsers = {
  [types.INT8]: (v: string) => Number(v),
  [types.NUMERIC]: (v: string) => Number(v),
};

/** The file in a PGlite DATA_DIR naming the process that has it open. */
export const LOCK_FILE = 'keygate.pid';

/** The folders this process holds (resolved paths). */
const held = new Set<string>();

/** Whether process `pid` is alive (EPERM: alive, another user's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Take DATA_DIR for this process. PGlite is one process's database: a second process opening the same
 * folder works on its own copy, which the first never sees and overwrites at its stop (a CLI write beside
 * a running all-in-one was reported done and lost). The lock file holds the owner's pid; one whose
 * process is gone (killed, crashed) is taken over. Returns the release.
 */
function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(resolve(dataDir), LOCK_FILE);
  if (held.has(file))
    throw new ConfigError(`setting DATA_DIR: ${dataDir} is already open in this process (PGlite allows one opening)`);
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      held.add(file);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
    }
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile
      throw err;
    }
    const pid = Number.parseInt(text, 10);
    // Our own pid, not held here: a killed earlier process of the same pid (pid 1 in a container).
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid))
      throw new ConfigError(
        `setting DATA_DIR: ${dataDir} is in use by process ${pid} (PGlite allows one process: stop it first, or share a PostgreSQL database through DATABASE_URL)`,
      );
    // Stale: its owner is gone. Removed only while it still names that owner, then created again
    // exclusively: of two processes taking it over at once, one creates it and the other is refused.
    if (readFileSync(file, 'utf8') === text) rmSync(file, { force: true });
  }
  return () => {
    held.delete(file);
    try {
      if (Number.parseInt(readFileSync(file, 'utf8'), 10) === process.pid) rmSync(file, { force: true });
    } catch {
      // Already gone: nothing to release.
    }
  };
}

/**
 * PGlite in `dataDir` (a folder, or `memory://` for a throw-away database). A folder is held by this
 * process until `close` (lockDataDir).
 */
export async function openPglite(dataDir: string): Promise<Db> {
  const release = dataDir.startsWith('memory://') ? () => {} : lockDataDir(dataDir);
  let db: PGlite;
  try {
    db = await PGlite.create(dataDir, { parsers });
  } catch (err) {
    release();
    throw err;
  }
  return {
    kind: 'pglite',
    schema: 'public',
    async query<T extends Row>(sql: string, params?: unknown[]) {
      return (await db.query<T>(sql, params)).rows;
    },
    async tx(fn) {
      return db.transaction(async (t) =>
        fn({
          query: async <T extends Row>(sql: string, params?: unknown[]) => (await t.query<T>(sql, params)).rows,
          exec: async (sql) => void (await t.exec(sql)),
        }),
      );
    },
    async listen(channel, onPayload) {
      const unsub = await db.listen(channel, onPayload);
      return async () => unsub();
    },
    async ping() {
      return !db.closed;
    },
    async close() {
      try {
        if (!db.closed) await db.close();
      } finally {
        release();
      }
    },
  };
}

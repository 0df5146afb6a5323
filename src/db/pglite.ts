import { PGlite, types } from '@electric-sql/pglite';
import type { Db, Row } from './types.js';

const parsers = {
  [types.INT8]: (v: string) => Number(v),
  [types.NUMERIC]: (v: string) => Number(v),
};

/** PGlite in `dataDir` (a folder, or `memory://` for a throw-away database). */
export async function openPglite(dataDir: string): Promise<Db> {
  const db = await PGlite.create(dataDir, { parsers });
  return {
    kind: 'pglite',
    schema: 'public',
    async query<T extends Row>(sql: string, params?: unknown[]) {
      return (await db.query<T>(sql, params)).rows;
    },
    async exec(sql) {
      await db.exec(sql);
    },
    async tx(fn) {
      return db.transaction(async (t) =>
        fn({ query: async <T extends Row>(sql: string, params?: unknown[]) => (await t.query<T>(sql, params)).rows }),
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
      if (!db.closed) await db.close();
    },
  };
}

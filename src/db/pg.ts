import pg from 'pg';
import type { Db, Queryable, Row } from './types.js';

// int8 (counts, sums) as JS numbers: every bigint this schema produces fits in 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
// numeric as numbers (averages, rates).
pg.types.setTypeParser(1700, (v) => Number(v));

export async function openPg(url: string, schema = 'public'): Promise<Db> {
  const options = schema === 'public' ? undefined : `-c search_path=${schema}`;
  const pool = new pg.Pool({ connectionString: url, max: 10, options, connectionTimeoutMillis: 5_000 });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  if (schema !== 'public') {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    } finally {
      await c.end();
    }
  }
  let listener: pg.Client | null = null;
  const handlers = new Map<string, Set<(p: string) => void>>();

  const q: Queryable = {
    async query<T extends Row>(sql: string, params?: unknown[]) {
      return (await pool.query(sql, params as any[])).rows as T[];
    },
  };
  return {
    kind: 'pg',
    schema,
    query: q.query,
    async exec(sql) {
      await pool.query(sql);
    },
    async tx(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn({ query: async (sql, params) => (await client.query(sql, params as any[])).rows });
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async listen(channel, onPayload) {
      if (!listener) {
        listener = new pg.Client({ connectionString: url, options });
        listener.on('error', () => {});
        await listener.connect();
        listener.on('notification', (n) => {
          for (const h of handlers.get(n.channel) ?? []) h(n.payload ?? '');
        });
      }
      let set = handlers.get(channel);
      if (!set) {
        handlers.set(channel, (set = new Set()));
        await listener.query(`LISTEN "${channel}"`);
      }
      set.add(onPayload);
      return async () => {
        set!.delete(onPayload);
      };
    },
    async ping() {
      try {
        await pool.query('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await listener?.end().catch(() => {});
      await pool.end();
    },
  };
}

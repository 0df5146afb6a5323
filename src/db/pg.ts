import pg from 'pg';
import type { Db, Queryable, Row, Transaction } from './types.js';

// int8 (counts, sums) as JS numbers: every bigint this schema produces fits in 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
// numeric as numbers (averages, rates).
pg.types.setTypeParser(1700, (v) => Number(v));

/** Creates the schema a test (or a deployment) asked for, on a connection of its own. */
async function ensureSchema(url: string, schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  } finally {
    await c.end();
  }
}

/**
 * The LISTEN connection, opened at the first listen and reconnecting by itself; after a reconnect
 * every handler receives `*` (notifications may have been missed meanwhile).
 */
function createListener(
  url: string,
  options: string | undefined,
  queryTimeoutMs: number,
): Pick<Db, 'listen' | 'close'> {
  let listener: pg.Client | null = null;
  let closed = false;
  let reconnectTimer: NodeJS.Timeout | null = null;
  const handlers = new Map<string, Set<(p: string) => void>>();

  async function connectListener(): Promise<void> {
    const c = new pg.Client({ connectionString: url, options, connectionTimeoutMillis: queryTimeoutMs });
    c.on('notification', (n) => {
      for (const h of handlers.get(n.channel) ?? []) h(n.payload ?? '');
    });
    const lost = () => {
      if (listener !== c) return;
      listener = null;
      scheduleReconnect();
    };
    c.on('error', lost);
    c.on('end', lost);
    await c.connect();
    for (const ch of handlers.keys()) await c.query(`LISTEN "${ch}"`);
    listener = c;
  }

  function scheduleReconnect() {
    if (closed || reconnectTimer) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = null;
      connectListener()
        .then(() => {
          for (const set of handlers.values()) for (const h of set) h('*');
        })
        .catch(() => scheduleReconnect());
    }, 500);
    reconnectTimer.unref();
  }

  return {
    async listen(channel, onPayload) {
      let set = handlers.get(channel);
      if (!set) {
        handlers.set(channel, (set = new Set()));
        if (listener) await listener.query(`LISTEN "${channel}"`);
      }
      set.add(onPayload);
      if (!listener && !reconnectTimer) await connectListener();
      return async () => {
        set!.delete(onPayload);
      };
    },
    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      const l = listener;
      listener = null;
      await l?.end().catch(() => {});
    },
  };
}

/** Runs fn in one transaction on a client of the pool: commits when it resolves, rolls back when it throws. */
async function inTransaction<T>(pool: pg.Pool, fn: (q: Transaction) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn({
      query: async (sql, params) => (await client.query(sql, params as unknown[])).rows,
      // Without parameters pg sends the simple query protocol, which runs a script of statements.
      exec: async (sql) => void (await client.query(sql)),
    });
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * A pool with bounded waits (no request hangs on an absent database longer than `queryTimeoutMs`),
 * and a LISTEN connection that reconnects by itself; after a reconnect every handler receives `*`
 * (notifications may have been missed meanwhile).
 */
export async function openPg(url: string, schema = 'public', queryTimeoutMs = 10_000): Promise<Db> {
  const options = schema === 'public' ? undefined : `-c search_path=${schema}`;
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    options,
    connectionTimeoutMillis: queryTimeoutMs,
    query_timeout: queryTimeoutMs,
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  if (schema !== 'public') await ensureSchema(url, schema);
  const listener = createListener(url, options, queryTimeoutMs);
  const q: Queryable = {
    async query<T extends Row>(sql: string, params?: unknown[]) {
      return (await pool.query(sql, params as unknown[])).rows as T[];
    },
  };
  return {
    kind: 'pg',
    schema,
    query: q.query,
    tx: (fn) => inTransaction(pool, fn),
    listen: listener.listen,
    async ping() {
      try {
        await pool.query('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}

// One small query interface; `pg` (DATABASE_URL) and PGlite (embedded, DATA_DIR) implement it.

// A row holds whatever columns its SQL selects; the view functions beside each query read them by name.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Row = Record<string, any>;

export interface Queryable {
  /** Run one parameterized statement ($1, $2, ...) and return its rows. */
  query<T extends Row = Row>(sql: string, params?: unknown[]): Promise<T[]>;
}

/** The statements of one transaction: parameterized queries, and a script of several (a migration). */
export interface Transaction extends Queryable {
  /** Run several statements without parameters, in this transaction. */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** The schema every table lives in (search_path); tests use one per file. */
  readonly schema: string;
  /** Run fn in one transaction; commits when it resolves, rolls back when it throws. */
  tx<T>(fn: (q: Transaction) => Promise<T>): Promise<T>;
  /** LISTEN on a channel; resolves to an unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /** True when a trivial query answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

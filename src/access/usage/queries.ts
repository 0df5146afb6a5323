// Every statement of the usage history's writer (src/access/usage/): the batched upserts and the
// partitions' upkeep through the functions of migrations 100_usage.sql and 101_usage_org.sql.
import type { Queryable, Transaction } from '../../db/types.js';

export const USAGE_TABLES = ['usage_minute', 'usage_hour', 'usage_day'] as const;
/** The sums per organization of the key tables, grain by grain (USAGE_TABLES[i]'s is ORG_TABLES[i]). */
export const ORG_TABLES = ['usage_org_minute', 'usage_org_hour', 'usage_org_day'] as const;
export type KeyTable = (typeof USAGE_TABLES)[number];
export type OrgTable = (typeof ORG_TABLES)[number];
export type UsageTable = KeyTable | OrgTable;

/** One table's rows of a flush, column by column, sorted by its primary key (key_id, outcome, bucket). */
export interface UsageRows {
  buckets: string[];
  organizations: number[];
  keys: number[];
  outcomes: string[];
  counts: number[];
}

/**
 * Adds the rows' counts to `table`'s. Rows come sorted by the primary key, so two instances flushing
 * the same keys at once lock them in the same order and never deadlock.
 */
export async function addUsage(q: Queryable, table: KeyTable, rows: UsageRows): Promise<void> {
  await q.query(
    `INSERT INTO ${table} (bucket, organization_id, key_id, outcome, count)
     SELECT * FROM unnest($1::timestamptz[], $2::int[], $3::int[], $4::text[], $5::bigint[])
     ON CONFLICT (key_id, outcome, bucket) DO UPDATE SET count = ${table}.count + EXCLUDED.count`,
    [rows.buckets, rows.organizations, rows.keys, rows.outcomes, rows.counts],
  );
}

/** One organization table's rows of a flush, sorted by its primary key (organization_id, bucket, outcome). */
export interface OrgUsageRows {
  buckets: string[];
  organizations: number[];
  outcomes: string[];
  counts: number[];
}

/** Adds the rows' counts to the organization table `table`'s; sorted, as addUsage's, so no deadlock. */
export async function addOrgUsage(q: Queryable, table: OrgTable, rows: OrgUsageRows): Promise<void> {
  await q.query(
    `INSERT INTO ${table} (bucket, organization_id, outcome, count)
     SELECT * FROM unnest($1::timestamptz[], $2::int[], $3::text[], $4::bigint[])
     ON CONFLICT (organization_id, bucket, outcome) DO UPDATE SET count = ${table}.count + EXCLUDED.count`,
    [rows.buckets, rows.organizations, rows.outcomes, rows.counts],
  );
}

/** The partition of `table` holding `at`, created when missing; true when it was created now. */
export async function createPartition(q: Queryable, table: UsageTable, at: Date): Promise<boolean> {
  const [row] = await q.query<{ created: boolean }>('SELECT keygate_usage_partition($1, $2) AS created', [
    table,
    at.toISOString(),
  ]);
  return row.created;
}

/** Drops every partition of `table` whose range ends at or before `before`; their names. */
export async function dropPartitionsBefore(q: Queryable, table: UsageTable, before: Date): Promise<string[]> {
  const rows = await q.query<{ name: string }>('SELECT keygate_usage_drop($1, $2) AS name', [
    table,
    before.toISOString(),
  ]);
  return rows.map((r) => r.name);
}

/** One instance at a time keeps the partitions, per schema; held until the transaction ends. */
export async function tryUpkeepLock(q: Transaction): Promise<boolean> {
  const [row] = await q.query<{ got: boolean }>(
    'SELECT pg_try_advisory_xact_lock(7355610, hashtext(current_schema())) AS got',
  );
  return row.got;
}

/** The partitions of `table` in the current schema, by name. */
export async function partitionsOf(q: Queryable, table: UsageTable): Promise<string[]> {
  const rows = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass(quote_ident(current_schema()) || '.' || $1) ORDER BY c.relname`,
    [table],
  );
  return rows.map((r) => r.name);
}

/** PostgreSQL's refusal of a row no partition takes (23514, "no partition of relation ... found for row"). */
export function isMissingPartition(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23514' && /no partition/i.test(e.message ?? '');
}

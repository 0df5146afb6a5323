// The usage history's tables as the readers' tests need them: the shape agreed with the writer
// (docs/usage.md, Storage; src/db/migrations/100_usage.sql once it is there), created when the
// migrations did not, each with a default partition unless it already has one, so rows of any time can
// be inserted; and rows written as the gateway's writer writes them (src/access/usage/writer.ts: every
// count added to the minute, the hour and the day in one go).
import type { Queryable } from '../../src/db/types.js';

export const USAGE_TABLES = ['usage_minute', 'usage_hour', 'usage_day'] as const;
export type UsageTable = (typeof USAGE_TABLES)[number];

export async function ensureUsageTables(q: Queryable): Promise<void> {
  for (const t of USAGE_TABLES) {
    await q.query(
      `CREATE TABLE IF NOT EXISTS ${t} (
         bucket timestamptz NOT NULL, organization_id integer NOT NULL, key_id integer NOT NULL,
         outcome text NOT NULL, count bigint NOT NULL, PRIMARY KEY (key_id, outcome, bucket)
       ) PARTITION BY RANGE (bucket)`,
    );
    await q.query(`CREATE INDEX IF NOT EXISTS ${t}_org_bucket ON ${t} (organization_id, bucket)`);
    const [{ has }] = await q.query(
      `SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass($1) AND partdefid <> 0) AS has`,
      [t],
    );
    if (!has) await q.query(`CREATE TABLE ${t}_test_default PARTITION OF ${t} DEFAULT`);
  }
  // The sums per organization the writer adds with them (migration 101), which organizations' charts read.
  for (const t of ORG_TABLES) {
    await q.query(
      `CREATE TABLE IF NOT EXISTS ${t} (
         bucket timestamptz NOT NULL, organization_id integer NOT NULL, outcome text NOT NULL,
         count bigint NOT NULL, PRIMARY KEY (organization_id, bucket, outcome)
       ) PARTITION BY RANGE (bucket)`,
    );
    const [{ has }] = await q.query(
      `SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass($1) AND partdefid <> 0) AS has`,
      [t],
    );
    if (!has) await q.query(`CREATE TABLE ${t}_test_default PARTITION OF ${t} DEFAULT`);
  }
}

const ORG_TABLES = ['usage_org_minute', 'usage_org_hour', 'usage_org_day'] as const;
const orgTable = (t: UsageTable) => t.replace('usage_', 'usage_org_');

export interface UsageRow {
  table: UsageTable;
  at: string | Date;
  org: number;
  key: number;
  outcome: string;
  count: number;
}

/** Rows added to what the table holds (an upsert, as the writer's batches add up). */
export async function insertUsage(q: Queryable, rows: UsageRow[]): Promise<void> {
  for (const r of rows) {
    await q.query(
      `INSERT INTO ${r.table} (bucket, organization_id, key_id, outcome, count) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (key_id, outcome, bucket) DO UPDATE SET count = ${r.table}.count + EXCLUDED.count`,
      [new Date(r.at), r.org, r.key, r.outcome, r.count],
    );
    const o = orgTable(r.table);
    await q.query(
      `INSERT INTO ${o} (bucket, organization_id, outcome, count) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, bucket, outcome) DO UPDATE SET count = ${o}.count + EXCLUDED.count`,
      [new Date(r.at), r.org, r.outcome, r.count],
    );
  }
}

export async function clearUsage(q: Queryable): Promise<void> {
  for (const t of [...USAGE_TABLES, ...ORG_TABLES]) await q.query(`DELETE FROM ${t}`);
}

export interface Answers {
  /** Any instant of the minute. */
  at: string;
  org: number;
  key: number;
  outcome: string;
  count: number;
}

const floorTo = (t: number, step: number) => Math.floor(t / step) * step;

/** Answers counted as the writer adds them: to the minute, the hour and the day that hold them. */
export async function insertAnswers(q: Queryable, answers: Answers[]): Promise<void> {
  const rows: UsageRow[] = [];
  for (const a of answers) {
    const t = new Date(a.at).getTime();
    for (const [table, step] of [
      ['usage_minute', 60_000],
      ['usage_hour', 3_600_000],
      ['usage_day', 86_400_000],
    ] as const)
      rows.push({ ...a, table, at: new Date(floorTo(t, step)) });
  }
  await insertUsage(q, rows);
}

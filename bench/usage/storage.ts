// The usage history's size and its charts' queries (issue 39): 10,000 keys over 30 days at the retention
// defaults (USAGE_MINUTE_DAYS 7, USAGE_HOUR_DAYS 90, USAGE_DAY_DAYS 400, so the minutes hold 7 days and
// the hours and days all 30), rows made with generate_series into a schema of the run's own (dropped at
// the end), the organization tables (migration 101) summed from them as the writer keeps them, then rows
// and disk per table (pg_total_relation_size over the partitions: heap, primary key and organization
// index) and the median of 5 EXPLAIN ANALYZE runs of each chart's query (USB_KEEP=1 keeps
// the schema to look further).
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/usage/storage.ts
// The traffic it stands for (env to change it): USB_KEYS keys (10000) in organizations of ten, but the
// first USB_BIG_ORG (1000) in organization 1; each key active USB_HOURS (6) hours a day with 2 outcomes
// (forwarded_2xx, forwarded_4xx), USB_MINUTES (30) minutes a day with 2 outcomes, and every day with 3
// (those two and limited_key). A key busier than that adds minute rows, bounded by 1,440 a day per outcome.
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { migrate, openDb, type Db } from '../../src/db/index.js';
import { createPartition, ORG_TABLES, USAGE_TABLES } from '../../src/access/usage/queries.js';

const env = process.env;
const KEYS = Number(env.USB_KEYS ?? 10_000);
const BIG_ORG = Number(env.USB_BIG_ORG ?? 1_000);
const HOURS = Number(env.USB_HOURS ?? 6);
const MINUTES = Number(env.USB_MINUTES ?? 30);
const DAYS = 30;
const MINUTE_DAYS = 7;
const DAY = 86_400_000;
/** The key and the organization of ten the charts are drawn for. */
const KEY = Math.min(4242, KEYS);
const SMALL_ORG = KEY <= BIG_ORG ? 1 : 2 + Math.floor((KEY - BIG_ORG - 1) / 10);

const orgOf = `CASE WHEN k <= ${BIG_ORG} THEN 1 ELSE 2 + (k - ${BIG_ORG} - 1) / 10 END`;
const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());

async function fill(db: Db): Promise<void> {
  for (let d = 0; d <= DAYS; d++) {
    const at = new Date(today - d * DAY);
    for (const [minute, hour, day] of [USAGE_TABLES, ORG_TABLES]) {
      if (d <= MINUTE_DAYS) await createPartition(db, minute, at);
      await createPartition(db, hour, at);
      await createPartition(db, day, at);
    }
  }
  const t0 = `'${new Date(today).toISOString()}'::timestamptz`;
  // Day d runs from today - d days; hour h of key k is (k + 4j) mod 24, minute m is 48j + k mod 48:
  // distinct within a key's day, so every row is its own primary key.
  await db.query(`INSERT INTO usage_day (bucket, organization_id, key_id, outcome, count)
    SELECT ${t0} - d * interval '1 day', ${orgOf}, k, o, 1 + (k + d) % 50
      FROM generate_series(1, ${KEYS}) k, generate_series(0, ${DAYS - 1}) d,
           unnest(ARRAY['forwarded_2xx', 'forwarded_4xx', 'limited_key']) o`);
  await db.query(`INSERT INTO usage_hour (bucket, organization_id, key_id, outcome, count)
    SELECT ${t0} - d * interval '1 day' + ((k + 4 * j) % 24) * interval '1 hour', ${orgOf}, k, o, 1 + (k + j) % 20
      FROM generate_series(1, ${KEYS}) k, generate_series(0, ${DAYS - 1}) d, generate_series(0, ${HOURS - 1}) j,
           unnest(ARRAY['forwarded_2xx', 'forwarded_4xx']) o`);
  await db.query(`INSERT INTO usage_minute (bucket, organization_id, key_id, outcome, count)
    SELECT ${t0} - d * interval '1 day' + (48 * j + k % 48) * interval '1 minute', ${orgOf}, k, o, 1 + (k + j) % 5
      FROM generate_series(1, ${KEYS}) k, generate_series(0, ${MINUTE_DAYS - 1}) d, generate_series(0, ${MINUTES - 1}) j,
           unnest(ARRAY['forwarded_2xx', 'forwarded_4xx']) o`);
  // The writer adds each flush to both in one transaction: the organization tables are these sums.
  for (const [i, t] of USAGE_TABLES.entries())
    await db.query(`INSERT INTO ${ORG_TABLES[i]} (bucket, organization_id, outcome, count)
      SELECT bucket, organization_id, outcome, sum(count) FROM ${t} GROUP BY 1, 2, 3`);
  // As autovacuum leaves them: statistics, and the visibility map the index-only scans rely on.
  for (const t of [...USAGE_TABLES, ...ORG_TABLES]) await db.query(`VACUUM ANALYZE ${t}`);
}

async function size(db: Db, table: string): Promise<{ rows: number; bytes: number; partitions: number }> {
  const [r] = await db.query(
    `SELECT (SELECT count(*) FROM ${table})::bigint AS rows,
            sum(pg_total_relation_size(relid))::bigint AS bytes,
            count(*) FILTER (WHERE isleaf)::int AS partitions
       FROM pg_partition_tree('${table}')`,
  );
  return { rows: Number(r.rows), bytes: Number(r.bytes), partitions: r.partitions };
}

/** The median execution time of 5 EXPLAIN ANALYZE runs (after one unmeasured), and the plan's top nodes. */
interface Timed {
  ms: number;
  planning: number;
  rows: number;
  /** Shared buffers hit and read: the query's work whatever the machine's load. */
  buffers: number;
  plan: string;
}

async function timed(db: Db, sql: string): Promise<Timed> {
  const runs: Timed[] = [];
  for (let i = 0; i < 6; i++) {
    const [r] = await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`);
    const top = r['QUERY PLAN'][0];
    const nodes: string[] = [];
    const walk = (n: Record<string, unknown>, depth: number) => {
      if (depth > 3) return;
      nodes.push(`${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''}`);
      for (const c of (n.Plans as Record<string, unknown>[] | undefined) ?? []) walk(c, depth + 1);
    };
    walk(top.Plan, 0);
    if (i > 0)
      runs.push({
        ms: top['Execution Time'],
        planning: top['Planning Time'],
        rows: top.Plan['Actual Rows'],
        buffers: top.Plan['Shared Hit Blocks'] + top.Plan['Shared Read Blocks'],
        plan: [...new Set(nodes)].slice(0, 5).join(' > '),
      });
  }
  runs.sort((a, b) => a.ms - b.ms);
  return runs[runs.length >> 1];
}

async function main() {
  const url = env.DATABASE_URL;
  if (!url) throw new Error('set DATABASE_URL (the history lives in PostgreSQL)');
  const schema = `usage_bench_${randomBytes(3).toString('hex')}`;
  const db = await openDb({ databaseUrl: url, schema, queryTimeoutMs: 3_600_000 });
  try {
    await migrate(db);
    const t = performance.now();
    await fill(db);
    console.log(`filled in ${((performance.now() - t) / 1000).toFixed(0)} s`);
    let total = 0;
    let rowsAll = 0;
    for (const table of [...USAGE_TABLES, ...ORG_TABLES]) {
      const s = await size(db, table);
      total += s.bytes;
      rowsAll += s.rows;
      console.log(
        `${table.padEnd(17)} ${String(s.rows).padStart(10)} rows  ${(s.bytes / 2 ** 20).toFixed(0).padStart(6)} MiB  ${(s.bytes / s.rows).toFixed(0)} B/row  ${s.partitions} partitions`,
      );
    }
    console.log(
      `${'all'.padEnd(17)} ${String(rowsAll).padStart(10)} rows  ${(total / 2 ** 20).toFixed(0).padStart(6)} MiB`,
    );
    const since = (days: number) => `'${new Date(today + DAY - days * DAY).toISOString()}'::timestamptz`;
    const queries: [string, string][] = [
      [
        "a key's 30 days by outcome (usage_day)",
        `SELECT bucket, outcome, count FROM usage_day WHERE key_id = ${KEY} AND bucket >= ${since(30)} ORDER BY bucket, outcome`,
      ],
      [
        "a key's 7 days by hour and outcome (usage_hour)",
        `SELECT bucket, outcome, count FROM usage_hour WHERE key_id = ${KEY} AND bucket >= ${since(7)} ORDER BY bucket, outcome`,
      ],
      [
        "a key's day (UTC) by minute and outcome (usage_minute)",
        `SELECT bucket, outcome, count FROM usage_minute WHERE key_id = ${KEY} AND bucket >= ${since(1)} ORDER BY bucket, outcome`,
      ],
    ];
    // An organization's charts as src/access/service/usage-queries.ts reads them (the organization
    // tables), and, to compare, summed over its keys' rows as before migration 101.
    const orgCharts: [string, number, string, number][] = [
      ['an organization of 10 keys: 7 days by hour and outcome', SMALL_ORG, 'hour', 7],
      [`the organization of ${BIG_ORG} keys: 7 days by hour and outcome`, 1, 'hour', 7],
      [`the organization of ${BIG_ORG} keys: 30 days by day and outcome`, 1, 'day', 30],
      [`the organization of ${BIG_ORG} keys: its day by minute and outcome`, 1, 'minute', 1],
    ];
    for (const [from, label] of [
      ['usage_org_', 'usage_org_*'],
      ['usage_', 'key tables'],
    ])
      for (const [name, org, grain, days] of orgCharts)
        queries.push([
          `${name} (${label})`,
          `SELECT bucket, outcome, sum(count) AS count FROM ${from}${grain} WHERE organization_id = ${org} AND bucket >= ${since(days)} GROUP BY 1, 2 ORDER BY 1, 2`,
        ]);
    // The machine's load beside the times: on a shared 2-core machine they grow with it.
    console.log(
      `load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} on ${cpus().length} cores`,
    );
    for (const [name, sql] of queries) {
      const r = await timed(db, sql);
      console.log(
        `${name.padEnd(72)} ${r.ms.toFixed(2).padStart(8)} ms (+${r.planning.toFixed(2)} ms planning)  ${r.rows} rows  ${r.buffers} buffers  ${r.plan}`,
      );
    }
  } finally {
    await db.close();
    if (env.USB_KEEP) console.log(`kept schema ${schema}`);
    else await dropSchema(url, schema);
  }
}

async function dropSchema(url: string, schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => c.end());
}

await main();

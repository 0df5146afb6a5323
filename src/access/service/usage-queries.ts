// The SQL of the operators' reading side (usage-history.ts): the usage history's tables (usage_minute,
// usage_hour, usage_day: docs/usage.md, Storage) summed per bucket and outcome, the billing export's page
// of keys, and the console's overview and search. The writer adds every count to all three tables in one
// transaction, so a granularity's own table is whole: each reading reads that one table alone. An
// organization's counts and the overview's come from the sums per organization the writer adds in the
// same transaction (usage_org_minute, _hour, _day: migration 101), one row per bucket and outcome
// rather than one per key.
import type { Queryable, Row } from '../../db/types.js';

export type Granularity = 'minute' | 'hour' | 'day';

/** Whose counts: one key's, one organization's, or every row's (the overview's today). */
export type UsageSubject = { keyId: number } | { organizationId: number } | { all: true };

const TABLE: Record<Granularity, string> = { minute: 'usage_minute', hour: 'usage_hour', day: 'usage_day' };
const ORG_TABLE: Record<Granularity, string> = {
  minute: 'usage_org_minute',
  hour: 'usage_org_hour',
  day: 'usage_org_day',
};

function subjectFilter(s: UsageSubject, g: Granularity): { table: string; where: string; params: unknown[] } {
  // The primary key (key_id, outcome, bucket) serves a key; the organization table's primary key
  // (organization_id, bucket, outcome) an organization, as one range.
  if ('keyId' in s) return { table: TABLE[g], where: ' AND key_id = $3', params: [s.keyId] };
  if ('organizationId' in s)
    return { table: ORG_TABLE[g], where: ' AND organization_id = $3', params: [s.organizationId] };
  return { table: ORG_TABLE[g], where: '', params: [] };
}

/** The counts of [from, to) per bucket of `g` and outcome, bucket then outcome order. */
export async function usageCounts(
  q: Queryable,
  subject: UsageSubject,
  g: Granularity,
  from: Date,
  to: Date,
): Promise<{ bucket: Date; outcome: string; count: number }[]> {
  const { table, where, params } = subjectFilter(subject, g);
  const rows = await q.query(
    `SELECT bucket, outcome, sum(count) AS count FROM ${table}
      WHERE bucket >= $1 AND bucket < $2${where}
      GROUP BY bucket, outcome ORDER BY bucket, outcome`,
    [from, to, ...params],
  );
  return rows.map((r) => ({ bucket: new Date(r.bucket), outcome: String(r.outcome), count: Number(r.count) }));
}

/**
 * One page of a month's counts per key and outcome for the billing export, in (organization, key,
 * outcome) order after the key `after`, with the names and hint of each: at most `limit` rows, so the
 * last key of a full page may be cut (the caller starts the next page before it). Rows of no key
 * (organization 0) are not billed to anyone and stay out.
 */
export async function monthKeyCountsPage(
  q: Queryable,
  f: { from: Date; to: Date; organizationId?: number; after: { organizationId: number; keyId: number }; limit: number },
): Promise<Row[]> {
  return q.query(
    `WITH agg AS (
       SELECT organization_id, key_id, outcome, sum(count) AS count FROM usage_day
        WHERE bucket >= $1 AND bucket < $2 AND organization_id <> 0
          AND ($3::integer IS NULL OR organization_id = $3)
          AND (organization_id, key_id) > ($4::integer, $5::integer)
        GROUP BY organization_id, key_id, outcome)
     SELECT a.organization_id, o.name AS organization_name, a.key_id, k.name AS key_name, k.hint AS key_hint,
            a.outcome, a.count
       FROM agg a LEFT JOIN organizations o ON o.id = a.organization_id LEFT JOIN api_keys k ON k.id = a.key_id
      ORDER BY a.organization_id, a.key_id, a.outcome
      LIMIT $6`,
    [f.from, f.to, f.organizationId ?? null, f.after.organizationId, f.after.keyId, f.limit],
  );
}

// ---------------------------------------------------------------------------------------------
// The console's overview and search

/** Organizations and keys counted, the keys by status as of `now`. */
export async function accessCounts(q: Queryable, now: Date): Promise<Row> {
  return (
    await q.query(
      `SELECT (SELECT count(*) FROM organizations) AS organizations,
              count(*) AS keys,
              count(*) FILTER (WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)) AS active,
              count(*) FILTER (WHERE revoked_at IS NULL AND expires_at <= $1) AS expired,
              count(*) FILTER (WHERE revoked_at IS NOT NULL) AS revoked
         FROM api_keys`,
      [now],
    )
  )[0];
}

/** Keys not revoked whose expiry falls in (now, until], the soonest first, with their organization's name. */
export async function keysExpiringRows(q: Queryable, now: Date, until: Date, limit: number): Promise<Row[]> {
  return q.query(
    `SELECT k.id, k.organization_id, o.name AS organization_name, k.name, k.hint, k.type, k.expires_at
       FROM api_keys k JOIN organizations o ON o.id = k.organization_id
      WHERE k.revoked_at IS NULL AND k.expires_at > $1 AND k.expires_at <= $2
      ORDER BY k.expires_at, k.id LIMIT $3`,
    [now, until, limit],
  );
}

/** Every organization that is not free of a quota by its own override: id, name, plan, quota columns. */
export async function organizationQuotaRows(q: Queryable): Promise<Row[]> {
  return q.query(
    `SELECT id, name, plan, monthly_quota, monthly_quota_off FROM organizations WHERE NOT monthly_quota_off ORDER BY id`,
  );
}

/** `text` as a LIKE pattern that matches it anywhere, its own % _ and \ taken literally. */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Organizations whose id is `id` or whose name holds `text` (any case): the id's first, then by name. */
export async function searchOrganizationRows(q: Queryable, text: string, id: number | null, limit: number) {
  return q.query(
    `SELECT id, name, plan, paused, api_access FROM organizations
      WHERE id = $1 OR name ILIKE $2
      ORDER BY (id = $1) DESC NULLS LAST, lower(name), id LIMIT $3`,
    [id, containing(text), limit],
  );
}

/**
 * Keys whose id is `id`, whose name holds `text`, or whose hint holds it (`hint`: the hint a secret's
 * start gives, matched whole): the id's first, then by name.
 */
export async function searchKeyRows(
  q: Queryable,
  f: { text: string; id: number | null; hint: string | null; limit: number },
) {
  return q.query(
    `SELECT k.id, k.organization_id, o.name AS organization_name, k.name, k.hint, k.type, k.revoked_at, k.expires_at
       FROM api_keys k JOIN organizations o ON o.id = k.organization_id
      WHERE k.id = $1 OR k.name ILIKE $2 OR k.hint ILIKE $2 OR k.hint = $3
      ORDER BY (k.id = $1) DESC NULLS LAST, lower(k.name), k.id LIMIT $4`,
    [f.id, containing(f.text), f.hint, f.limit],
  );
}

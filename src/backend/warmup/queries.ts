// The SQL of the /v1 warmup routes (warmup/v1-routes.ts): an account with its v1 settings, today's
// warmup counts, and the writes of PATCH /v1/warmup-settings. Column names passed to the update
// functions come from the route's code, never from the request.
import type { Queryable, Row } from '../../db/types.js';
import { ORG_ACCOUNTS } from '../mailbox/queries.js';

/** An account of the organization's live workspaces joined with its v1 settings (nulls when it has none), or null. */
export async function accountWithV1Settings(
  db: Queryable,
  organizationId: number,
  accountId: number,
): Promise<Row | null> {
  const rows = await db.query(
    `SELECT a.*, s.strategy, s.max_below_floor, s.initial_limit, s.increase_by, s.language, s.content_industry, s.content_topics,
            s.google_volume, s.microsoft_volume, s.others_volume
       FROM ${ORG_ACCOUNTS} LEFT JOIN v1_warmup_settings s ON s.account_id = a.id WHERE a.id = $2`,
    [organizationId, accountId],
  );
  return rows[0] ?? null;
}

/** The account's warmup messages sent in [from, to), by outcome. */
export async function warmupCounts(db: Queryable, accountId: number, from: Date, to: Date) {
  const [counts] = await db.query<{ sent: number; inbox: number; spam: number; bounced: number; replied: number }>(
    `SELECT count(*)::int AS sent,
            count(*) FILTER (WHERE outcome = 'inbox')::int AS inbox,
            count(*) FILTER (WHERE outcome = 'spam')::int AS spam,
            count(*) FILTER (WHERE outcome = 'bounced')::int AS bounced,
            count(*) FILTER (WHERE replied)::int AS replied
       FROM warmup_messages WHERE account_id = $1 AND sent_at >= $2 AND sent_at < $3`,
    [accountId, from, to],
  );
  return counts;
}

/** The account's v1 strategy and max below v2's floor, or null when it has no v1 settings. */
export async function v1StrategyOf(
  db: Queryable,
  accountId: number,
): Promise<{ strategy: string; max_below_floor: number | null } | null> {
  const rows = await db.query(`SELECT strategy, max_below_floor FROM v1_warmup_settings WHERE account_id = $1`, [
    accountId,
  ]);
  return (rows[0] as { strategy: string; max_below_floor: number | null } | undefined) ?? null;
}

/** The account with its max below v2's floor, locked until the transaction ends. */
export async function lockAccountWithFloor(db: Queryable, accountId: number): Promise<Row | undefined> {
  const rows = await db.query(
    `SELECT a.*, s.max_below_floor FROM accounts a LEFT JOIN v1_warmup_settings s ON s.account_id = a.id WHERE a.id = $1 FOR UPDATE OF a`,
    [accountId],
  );
  return rows[0];
}

function assignments(columns: Record<string, unknown>, params: unknown[]): string[] {
  return Object.entries(columns).map(([column, value]) => `${column} = $${params.push(value)}`);
}

/** Sets the given account columns (`null` values included) and updated_at; nothing when there are none. */
export async function updateAccountColumns(
  db: Queryable,
  accountId: number,
  columns: Record<string, unknown>,
): Promise<void> {
  const params: unknown[] = [accountId];
  const set = assignments(columns, params);
  if (set.length) await db.query(`UPDATE accounts SET ${set.join(', ')}, updated_at = now() WHERE id = $1`, params);
}

/** Sets the given v1 settings columns and updated_at, creating the account's settings row first; nothing when there are none. */
export async function updateV1Settings(
  db: Queryable,
  accountId: number,
  columns: Record<string, unknown>,
): Promise<void> {
  const params: unknown[] = [accountId];
  const set = assignments(columns, params);
  if (!set.length) return;
  await db.query(`INSERT INTO v1_warmup_settings (account_id) VALUES ($1) ON CONFLICT (account_id) DO NOTHING`, [
    accountId,
  ]);
  await db.query(`UPDATE v1_warmup_settings SET ${set.join(', ')}, updated_at = now() WHERE account_id = $1`, params);
}

/** One weekday's sending window (0 = monday), in minutes of the local day. */
export async function upsertTimeSlot(
  db: Queryable,
  accountId: number,
  day: number,
  fromMinute: number,
  toMinute: number,
): Promise<void> {
  await db.query(
    `INSERT INTO v1_time_slots (account_id, day, from_minute, to_minute) VALUES ($1, $2, $3, $4)
     ON CONFLICT (account_id, day) DO UPDATE SET from_minute = $3, to_minute = $4`,
    [accountId, day, fromMinute, toMinute],
  );
}

// The usage history as operators read it (docs/usage.md, Reading and Export): a key's or an
// organization's counts per minute, hour or day with every bucket present (zero-filled), a month per key
// for billing, and the console's overview and search. Reads only: nothing here is audited. The history's
// rows are written by the gateways (docs/usage.md, Storage); the SQL is in usage-queries.ts.
import { ERROR_CODES } from '../../http/errors.js';
import { isoOrNull } from '../../db/time.js';
import { isStorableText } from '../../db/storable.js';
import { monthlyQuotaOf, limitOverridesOf } from '../../config/budgets.js';
import { getKey, profileOf } from './keys.js';
import { keyTypesOf } from '../key-types.js';
import { hintOf } from '../secrets.js';
import { nowOf, ServiceError, type ServiceContext } from './context.js';
import {
  accessCounts,
  keysExpiringRows,
  monthKeyCountsPage,
  organizationQuotaRows,
  searchKeyRows,
  searchOrganizationRows,
  usageCounts,
  type Granularity,
  type UsageSubject,
} from './usage-queries.js';
import { organizationRow, userRow } from './queries.js';
import { isDbId } from '../../config/contract.js';

export type { Granularity };
export const GRANULARITIES: readonly Granularity[] = ['minute', 'hour', 'day'];

const STEP_MS: Record<Granularity, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
/** The most buckets one reading returns: a day of minutes, some 83 days of hours, 400 days. */
export const MAX_BUCKETS: Record<Granularity, number> = { minute: 1_440, hour: 2_000, day: 400 };
const DEFAULT_SPAN_MS = 24 * 3_600_000;

/**
 * The outcomes every bucket lists, zero or not (docs/usage.md, Storage): the admitted ones (forwarded
 * with the upstream's status class, or answered by the gateway itself) and the rate-limit refusals.
 * Refusals by code (`refused_<code>`) are listed where the range holds any.
 */
export const ADMITTED_OUTCOMES = ['forwarded_2xx', 'forwarded_3xx', 'forwarded_4xx', 'forwarded_5xx', 'answered'];
export const FIXED_OUTCOMES = [...ADMITTED_OUTCOMES, 'limited_key', 'limited_address', 'limited_month'];

export const isAdmitted = (outcome: string): boolean => outcome === 'answered' || outcome.startsWith('forwarded_');

export interface HistoryQuery {
  from?: Date;
  to?: Date;
  granularity?: Granularity;
}

export interface HistoryCounts {
  admitted: number;
  refused: number;
  /** Every outcome of the reading (the same names in every bucket), with its count. */
  outcomes: Record<string, number>;
}

export interface HistoryBucket extends HistoryCounts {
  /** The bucket's first instant (UTC); it lasts one granularity. */
  start: string;
}

export interface UsageHistory {
  keyId?: number;
  organizationId: number;
  granularity: Granularity;
  /** The first bucket's start and the last bucket's end: the asked range widened to whole buckets. */
  from: string;
  to: string;
  /** The outcomes each bucket lists, in order. */
  outcomes: string[];
  totals: HistoryCounts;
  buckets: HistoryBucket[];
}

const floorTo = (t: number, step: number) => Math.floor(t / step) * step;
const ceilTo = (t: number, step: number) => Math.ceil(t / step) * step;

/**
 * The reading's range in whole buckets: `to` (default now) rounded up, `from` (default 24 hours before
 * that) rounded down; refused when empty, reversed or over the granularity's bucket count.
 */
export function historyRange(q: HistoryQuery, now: Date): { g: Granularity; from: Date; to: Date; count: number } {
  const g = q.granularity ?? 'hour';
  if (!GRANULARITIES.includes(g))
    throw new ServiceError(
      'invalid',
      `granularity must be one of ${GRANULARITIES.join(', ')}`,
      'granularity',
      'granularity',
    );
  for (const [name, t] of [
    ['from', q.from],
    ['to', q.to],
  ] as const)
    if (t !== undefined && !(t instanceof Date && Number.isFinite(t.getTime())))
      throw new ServiceError('invalid', `${name} must be an instant`, name, name);
  const step = STEP_MS[g];
  // Now's own bucket is the last one by default, also when now falls on its first instant.
  const rawTo = q.to?.getTime() ?? now.getTime() + 1;
  const to = ceilTo(rawTo, step);
  const rawFrom = q.from?.getTime() ?? to - DEFAULT_SPAN_MS;
  if (rawFrom >= rawTo) throw new ServiceError('invalid', 'from must be before to', 'from', 'from');
  const from = floorTo(rawFrom, step);
  const count = (to - from) / step;
  if (count > MAX_BUCKETS[g]) {
    throw new ServiceError(
      'invalid',
      `a history by ${g} holds at most ${MAX_BUCKETS[g]} buckets; from ${new Date(from).toISOString()} to ${new Date(to).toISOString()} is ${count}: narrow from and to, or take a coarser granularity`,
      'from',
      'from',
    );
  }
  return { g, from: new Date(from), to: new Date(to), count };
}

const emptyCounts = (outcomes: string[]): HistoryCounts => ({
  admitted: 0,
  refused: 0,
  outcomes: Object.fromEntries(outcomes.map((o) => [o, 0])),
});

function add(into: HistoryCounts, outcome: string, n: number) {
  into.outcomes[outcome] += n;
  if (isAdmitted(outcome)) into.admitted += n;
  else into.refused += n;
}

async function history(
  ctx: ServiceContext,
  subject: UsageSubject,
  q: HistoryQuery,
): Promise<Omit<UsageHistory, 'organizationId'>> {
  const { g, from, to, count } = historyRange(q, nowOf(ctx));
  const rows = await usageCounts(ctx.db, subject, g, from, to);
  const seen = new Set(rows.map((r) => r.outcome));
  const outcomes = [...FIXED_OUTCOMES, ...[...seen].filter((o) => !FIXED_OUTCOMES.includes(o)).sort()];
  const step = STEP_MS[g];
  const buckets: HistoryBucket[] = Array.from({ length: count }, (_, i) => ({
    start: new Date(from.getTime() + i * step).toISOString(),
    ...emptyCounts(outcomes),
  }));
  const totals = emptyCounts(outcomes);
  for (const r of rows) {
    const bucket = buckets[Math.round((r.bucket.getTime() - from.getTime()) / step)];
    if (!bucket) continue;
    add(bucket, r.outcome, r.count);
    add(totals, r.outcome, r.count);
  }
  return { granularity: g, from: from.toISOString(), to: to.toISOString(), outcomes, totals, buckets };
}

/**
 * A key's history. `organizationId` scopes the reading to one organization: a key of another is not
 * found, as is one that does not exist (and, for a user actor, a key of another organization).
 */
export async function keyUsageHistory(
  ctx: ServiceContext,
  keyId: number,
  q: HistoryQuery = {},
  scope: { organizationId?: number } = {},
): Promise<UsageHistory> {
  const range = historyRange(q, nowOf(ctx));
  const key = await getKey(ctx, keyId);
  if (scope.organizationId !== undefined && key.organizationId !== scope.organizationId)
    throw new ServiceError('not_found', `no key ${keyId} in organization ${scope.organizationId}`, 'no_key');
  const h = await history(ctx, { keyId }, { granularity: range.g, from: range.from, to: range.to });
  return { keyId, organizationId: key.organizationId, ...h };
}

/** An organization's history: every key of it, summed. A user actor reads only their own organization's. */
export async function organizationUsageHistory(
  ctx: ServiceContext,
  organizationId: number,
  q: HistoryQuery = {},
): Promise<UsageHistory> {
  const range = historyRange(q, nowOf(ctx));
  const user = ctx.actor.kind === 'user' ? await userRow(ctx.db, ctx.actor.id) : null;
  const foreign = ctx.actor.kind === 'user' && user?.organization_id !== organizationId;
  if (foreign || !(await organizationRow(ctx.db, organizationId)))
    throw new ServiceError('not_found', `no organization ${organizationId}`, 'no_organization');
  const h = await history(ctx, { organizationId }, { granularity: range.g, from: range.from, to: range.to });
  return { organizationId, ...h };
}

// ---------------------------------------------------------------------------------------------
// The billing export

/** The outcome families: one count column each, after the totals. */
const FAMILY_COLUMNS = [
  'forwarded_2xx',
  'forwarded_3xx',
  'forwarded_4xx',
  'forwarded_5xx',
  'answered',
  'limited_key',
  'limited_address',
  'limited_month',
  'refused_authentication',
  'refused_authorization',
  'refused_other',
] as const;
export type ExportFamily = (typeof FAMILY_COLUMNS)[number];

/**
 * The export's columns, in order (docs/usage.md, Export): a stable format. New columns are only ever
 * added at the end; none is renamed, reordered or dropped.
 */
export const EXPORT_COLUMNS = [
  'month',
  'organization_id',
  'organization_name',
  'key_id',
  'key_name',
  'key_hint',
  'admitted',
  'refused',
  ...FAMILY_COLUMNS,
] as const;

export type ExportRow = {
  month: string;
  organization_id: number;
  organization_name: string;
  key_id: number;
  key_name: string;
  key_hint: string;
  admitted: number;
  refused: number;
} & Record<ExportFamily, number>;

/** The failed-authentication cooldown's codes: a refusal of authentication, whatever its status. */
const COOLDOWN_CODES = new Set(['150006', 'too_many_failed_attempts']);

/**
 * The family column of an outcome: the admitted and rate-limit outcomes are columns of their own; a
 * refusal by code goes by its status in the error table (401 and the failed-authentication cooldown:
 * authentication; 403: authorization; any other code: other). An admitted outcome outside the table's
 * list counts in `admitted` only.
 */
export function familyOf(outcome: string): ExportFamily | null {
  if ((FAMILY_COLUMNS as readonly string[]).includes(outcome) && !outcome.startsWith('refused_'))
    return outcome as ExportFamily;
  if (isAdmitted(outcome)) return null;
  const code = outcome.startsWith('refused_') ? outcome.slice('refused_'.length) : '';
  const spec = (ERROR_CODES as Record<string, { status: number } | undefined>)[code];
  if (COOLDOWN_CODES.has(code) || spec?.status === 401) return 'refused_authentication';
  if (spec?.status === 403) return 'refused_authorization';
  return 'refused_other';
}

/** `YYYY-MM` as its first instant and the next month's (UTC); refused unless a month of 2000 to 9999. */
export function monthRange(month: string): { from: Date; to: Date } {
  const m = /^([2-9][0-9]{3})-(0[1-9]|1[0-2])$/.exec(month);
  if (!m) throw new ServiceError('invalid', 'month must be YYYY-MM, e.g. 2026-11', 'month', 'month');
  const [y, mo] = [Number(m[1]), Number(m[2]) - 1];
  return { from: new Date(Date.UTC(y, mo, 1)), to: new Date(Date.UTC(y, mo + 1, 1)) };
}

const EXPORT_PAGE_ROWS = 5_000;

/** What spans every organization is for operators: a user (a session of the web app) sees their own. */
function operatorsOnly(ctx: ServiceContext, what: string): void {
  if (ctx.actor.kind === 'user') throw new ServiceError('forbidden', `${what} is for operators`, 'forbidden');
}

/**
 * A month's counts per key, in (organization, key) order, one row per key that has any count: every
 * organization's, or one's (`organizationId`; not found refused before the first row). Read a page at a
 * time, so a month of every key never sits in memory whole.
 */
export async function monthUsageRows(
  ctx: ServiceContext,
  f: { month: string; organizationId?: number; pageRows?: number },
): Promise<AsyncIterable<ExportRow>> {
  const { from, to } = monthRange(f.month);
  operatorsOnly(ctx, 'the billing export');
  if (f.organizationId !== undefined && !(await organizationRow(ctx.db, f.organizationId)))
    throw new ServiceError('not_found', `no organization ${f.organizationId}`, 'no_organization');
  return monthPages(ctx, { ...f, from, to, pageRows: f.pageRows ?? EXPORT_PAGE_ROWS });
}

async function* monthPages(
  ctx: ServiceContext,
  f: { month: string; from: Date; to: Date; organizationId?: number; pageRows: number },
) {
  const { month, from, to, organizationId, pageRows } = f;
  let after = { organizationId: 0, keyId: 0 };
  for (;;) {
    const rows = await monthKeyCountsPage(ctx.db, { from, to, organizationId, after, limit: pageRows });
    const full = rows.length === pageRows;
    // A full page may end inside its last key: that key starts the next page.
    const lastKey = rows.length ? rows[rows.length - 1].key_id : null;
    const keep = full ? rows.filter((r) => r.key_id !== lastKey) : rows;
    let current: ExportRow | null = null;
    for (const r of keep) {
      if (!current || current.key_id !== r.key_id) {
        if (current) yield current;
        current = exportRow(month, r);
      }
      const n = Number(r.count);
      if (isAdmitted(r.outcome)) current.admitted += n;
      else current.refused += n;
      const family = familyOf(r.outcome);
      if (family) current[family] += n;
    }
    if (current) yield current;
    if (!full) return;
    const last = keep[keep.length - 1];
    if (!last) throw new Error('an export page holds a single key: raise EXPORT_PAGE_ROWS');
    after = { organizationId: last.organization_id, keyId: last.key_id };
  }
}

function exportRow(month: string, r: Record<string, unknown>): ExportRow {
  const row: Record<string, string | number> = {
    month,
    organization_id: Number(r.organization_id),
    organization_name: String(r.organization_name ?? ''),
    key_id: Number(r.key_id),
    key_name: String(r.key_name ?? ''),
    key_hint: String(r.key_hint ?? ''),
    admitted: 0,
    refused: 0,
  };
  for (const c of FAMILY_COLUMNS) row[c] = 0;
  return row as ExportRow;
}

export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, its quotes doubled. */
export function csvField(v: string | number): string {
  if (typeof v === 'number') return String(v);
  // A name starting like a formula is written as text, so a spreadsheet never runs it (OWASP, CSV injection).
  const text = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const csvLine = (values: (string | number)[]) => values.map(csvField).join(',') + '\r\n';

/**
 * The export as text, a line at a time: CSV (a header row, CRLF line ends) or JSON lines (an object
 * per key with the columns as fields, in order). The admin API and the CLI write the same bytes.
 */
export async function* exportText(rows: AsyncIterable<ExportRow>, format: ExportFormat): AsyncIterable<string> {
  // The first page is read before the header: a failure there comes before any byte (an error answer).
  const it = rows[Symbol.asyncIterator]();
  let next = await it.next();
  if (format === 'csv') yield csvLine([...EXPORT_COLUMNS]);
  for (; !next.done; next = await it.next())
    yield format === 'csv' ? csvLine(EXPORT_COLUMNS.map((c) => next.value[c])) : JSON.stringify(next.value) + '\n';
}

// ---------------------------------------------------------------------------------------------
// The console's overview and search

export interface ExpiringKey {
  id: number;
  organizationId: number;
  organizationName: string;
  name: string;
  hint: string;
  type: string;
  expiresAt: string;
}

/** The database's half of the overview: counts, today's traffic from the history, keys expiring soon. */
export async function overviewFacts(ctx: ServiceContext, o: { expiringWithinMs: number; expiringLimit: number }) {
  operatorsOnly(ctx, 'the overview');
  const now = nowOf(ctx);
  const counts = await accessCounts(ctx.db, now);
  const dayStart = new Date(floorTo(now.getTime(), STEP_MS.day));
  const today = await history(
    ctx,
    { all: true },
    { granularity: 'day', from: dayStart, to: new Date(now.getTime() + 1) },
  );
  const expiring = await keysExpiringRows(ctx.db, now, new Date(now.getTime() + o.expiringWithinMs), o.expiringLimit);
  return {
    organizations: Number(counts.organizations),
    keys: {
      total: Number(counts.keys),
      active: Number(counts.active),
      expired: Number(counts.expired),
      revoked: Number(counts.revoked),
    },
    today: { date: dayStart.toISOString().slice(0, 10), ...today.totals },
    expiringKeys: expiring.map((k): ExpiringKey => ({
      id: k.id,
      organizationId: k.organization_id,
      organizationName: k.organization_name,
      name: k.name,
      hint: k.hint,
      type: k.type,
      expiresAt: isoOrNull(k.expires_at)!,
    })),
  };
}

/** Every organization with a monthly quota (its own, else its plan's), for the quota's counters to be read. */
export async function organizationsWithQuota(
  ctx: ServiceContext,
): Promise<{ id: number; name: string; monthlyQuota: number }[]> {
  operatorsOnly(ctx, 'the overview');
  const plans = ctx.plans();
  const out: { id: number; name: string; monthlyQuota: number }[] = [];
  for (const row of await organizationQuotaRows(ctx.db)) {
    const quota = monthlyQuotaOf(plans, row.plan, limitOverridesOf(row));
    if (quota !== null) out.push({ id: row.id, name: row.name, monthlyQuota: quota });
  }
  return out;
}

export const SEARCH_MAX = 20;
const SEARCH_TEXT_MAX = 100;

/**
 * Organizations and keys by name (any part, any case), id, or key hint (any part, or a secret's start:
 * its first characters are the hint), at most SEARCH_MAX of each.
 */
export async function searchAccess(ctx: ServiceContext, raw: string) {
  operatorsOnly(ctx, 'the search');
  const text = raw.trim();
  if (!isStorableText(text)) throw new ServiceError('invalid', 'q holds a character no name can hold', 'q', 'q');
  if (text.length < 1 || text.length > SEARCH_TEXT_MAX)
    throw new ServiceError('invalid', `q must be 1 to ${SEARCH_TEXT_MAX} characters`, 'q', 'q');
  const id = isDbId(text) ? Number(text) : null;
  // A pasted secret is found by its hint: its type's prefix, four characters and an ellipsis (hintOf).
  const type = keyTypesOf(profileOf(ctx)).find((t) => text.startsWith(t.prefix));
  const hint = type && text.length >= type.prefix.length + 4 ? hintOf(text, type.prefix) : null;
  const now = nowOf(ctx);
  const orgs = await searchOrganizationRows(ctx.db, text, id, SEARCH_MAX);
  const keys = await searchKeyRows(ctx.db, { text, id, hint, limit: SEARCH_MAX });
  return {
    organizations: orgs.map((o) => ({
      id: o.id as number,
      name: o.name as string,
      plan: (o.plan ?? null) as string | null,
      paused: Boolean(o.paused),
      apiAccess: Boolean(o.api_access),
    })),
    keys: keys.map((k) => ({
      id: k.id as number,
      organizationId: k.organization_id as number,
      organizationName: k.organization_name as string,
      name: k.name as string,
      hint: k.hint as string,
      type: k.type as string,
      status: (k.revoked_at
        ? 'revoked'
        : k.expires_at && new Date(k.expires_at).getTime() <= now.getTime()
          ? 'expired'
          : 'active') as 'active' | 'expired' | 'revoked',
    })),
  };
}

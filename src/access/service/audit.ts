// The audit trail (migrations 060 and 091): one append-only row per access change, written inside the
// change's own transaction so that a change and its record commit or roll back together. The
// database refuses UPDATE, DELETE and TRUNCATE, stamps each row's id, time and connecting role, and
// chains it to the row before by a hash (verifyAudit checks the chain); purgeAudit (the retention job)
// is the only deleter.
import { createHash } from 'node:crypto';
import type { Queryable, Row } from '../../db/types.js';
import { actorColumns, ServiceError, type Actor, type ServiceContext } from './context.js';
import {
  appendAudit,
  auditChain,
  auditChainRows,
  auditRowsAfter,
  auditRowsNewestFirst,
  purgeAuditRows,
  type AuditFilter,
} from './audit-queries.js';

export type { AuditFilter };

export interface AuditEvent {
  /** `<target>.<verb>`, e.g. `key.create`, `key.rotate`, `organization.pause`. */
  action: string;
  targetType: 'key' | 'organization' | 'workspace' | 'session' | 'admin-token' | 'seed' | (string & {});
  targetIds: (number | string)[];
  organizationId: number | null;
  before?: unknown;
  after?: unknown;
}

export interface AuditRow {
  id: number;
  at: string;
  actor: { kind: Actor['kind']; id: string | null; name: string | null };
  /** The database role that wrote the row (stamped by the database, not the writer). */
  dbUser: string | null;
  action: string;
  targetType: string;
  targetIds: string[];
  organizationId: number | null;
  before: unknown;
  after: unknown;
  requestId: string | null;
}

// Never stored, whatever a caller hands in: a view that slipped a secret in loses it here.
const SECRET_FIELDS = new Set([
  'secret',
  'token',
  'keyHash',
  'key_hash',
  'previous_key_hash',
  'previousKeyHash',
  'tokenHash',
  'token_hash',
  'password',
  'pepper',
]);

function scrub(v: unknown): unknown {
  if (v === undefined) return null;
  if (Array.isArray(v)) return v.map(scrub);
  if (v instanceof Date) return v.toISOString();
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (!SECRET_FIELDS.has(k)) out[k] = scrub(x);
    return out;
  }
  return v;
}

/**
 * Record one access change; call it with the transaction's queryable, before the commit. Through
 * keygate_audit_append, the one write the programs' database role may make to the trail: the time is
 * the database's, not `ctx.clock`'s, so that no writer can date a row.
 */
export async function recordAudit(
  q: Queryable,
  ctx: Pick<ServiceContext, 'actor' | 'requestId'>,
  event: AuditEvent,
): Promise<void> {
  await appendAudit(q, {
    actor: actorColumns(ctx.actor),
    action: event.action,
    targetType: event.targetType,
    targetIds: event.targetIds.map(String),
    organizationId: event.organizationId,
    before: event.before === undefined ? null : JSON.stringify(scrub(event.before)),
    after: event.after === undefined ? null : JSON.stringify(scrub(event.after)),
    requestId: ctx.requestId ?? null,
  });
}

export const AUDIT_PAGE_MAX = 1000;

function auditView(r: Row): AuditRow {
  return {
    id: Number(r.id),
    at: new Date(r.at).toISOString(),
    actor: { kind: r.actor_kind, id: r.actor_id, name: r.actor_name },
    dbUser: r.db_user ?? null,
    action: r.action,
    targetType: r.target_type,
    targetIds: r.target_ids,
    organizationId: r.organization_id,
    before: r.before,
    after: r.after,
    requestId: r.request_id,
  };
}

/** One page of the trail, newest first (`limit` 1 to 1000, default 100). Reading is not audited. */
export async function listAudit(ctx: Pick<ServiceContext, 'db'>, f: AuditFilter = {}): Promise<AuditRow[]> {
  const limit = f.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > AUDIT_PAGE_MAX)
    throw new ServiceError('invalid', `limit must be 1 to ${AUDIT_PAGE_MAX}`, undefined, 'limit');
  const rows = await auditRowsNewestFirst(ctx.db, f, limit);
  return rows.map(auditView);
}

/** Every matching row, oldest first, a page at a time (for `keygate audit export`). */
export async function* exportAudit(
  ctx: Pick<ServiceContext, 'db'>,
  f: Omit<AuditFilter, 'beforeId' | 'limit'> = {},
): AsyncGenerator<AuditRow> {
  let afterId = 0;
  for (;;) {
    const rows = await auditRowsAfter(ctx.db, f, afterId, 500);
    for (const r of rows) yield auditView(r);
    if (rows.length < 500) return;
    afterId = Number(rows[rows.length - 1].id);
  }
}

/**
 * The retention job: delete the rows older than `retentionDays` (at least 1), through the database's
 * keygate_purge_audit, the one path its trigger lets delete. The database keeps at least the retention
 * its owner recorded at `keygate migrate` (AUDIT_RETENTION_DAYS), whatever this caller asks for, and
 * deletes only a prefix of the chain, leaving the hash of the last row it removed as the chain's anchor.
 * Returns the count. Not itself audited: it is the trail's own upkeep, and its effect is visible in
 * the oldest row and the anchor.
 */
export async function purgeAudit(ctx: Pick<ServiceContext, 'db'>, retentionDays: number): Promise<number> {
  if (!Number.isInteger(retentionDays) || retentionDays < 1)
    throw new ServiceError('invalid', 'retention must be a whole number of days, at least 1');
  return purgeAuditRows(ctx.db, retentionDays);
}

export type AuditVerification =
  | { ok: true; rows: number; firstId: number | null; lastId: number | null; headHash: string }
  | { ok: false; row: number; reason: string; checked: number };

/**
 * Walk the chain from its anchor (the hash the oldest kept row must follow) to its head, recomputing
 * each row's hash here from its columns, so that a changed function in the database cannot vouch for a
 * changed row. Stops at the first row that does not follow: its content no longer matches its hash
 * (edited), or its previous hash is not the hash of the row before it (a row removed or added before
 * it); rows removed after the last one show as the head naming a row that is gone.
 */
export async function verifyAudit(ctx: Pick<ServiceContext, 'db'>): Promise<AuditVerification> {
  const chain = await auditChain(ctx.db);
  let expected: string = chain.anchor_hash;
  let checked = 0;
  let firstId: number | null = null;
  let lastId = 0;
  for (;;) {
    const rows = await auditChainRows(ctx.db, lastId, 500);
    for (const r of rows) {
      const id = Number(r.id);
      if (r.prev_hash !== expected)
        return {
          ok: false,
          row: id,
          checked,
          reason:
            r.prev_hash === null
              ? 'it carries no hash chain (written with the triggers off)'
              : firstId === null
                ? "it does not follow the chain's anchor (a row before it was removed, or it was added)"
                : `it does not follow row ${lastId} (a row between them was removed, or it was added)`,
        };
      const hash = createHash('sha256').update(`${r.prev_hash}\n${r.content}`).digest('hex');
      if (r.hash !== hash)
        return { ok: false, row: id, checked, reason: 'its content does not match its hash (edited)' };
      expected = r.hash;
      firstId ??= id;
      lastId = id;
      checked++;
    }
    if (rows.length < 500) break;
  }
  const headId = chain.head_id === null ? null : Number(chain.head_id);
  if (expected !== chain.head_hash || (checked > 0 && headId !== lastId))
    return {
      ok: false,
      row: headId ?? lastId,
      checked,
      reason: `the chain's head is row ${headId}, the trail ends ${checked ? `at row ${lastId}` : 'empty'} (rows after it were removed)`,
    };
  return { ok: true, rows: checked, firstId, lastId: checked ? lastId : null, headHash: expected };
}

// The SQL of the audit trail (audit.ts): the one append through keygate_audit_append, the reads of a
// filtered page, the purge through keygate_purge_audit and the rows the chain check recomputes.
import type { Queryable, Row } from '../../db/types.js';
import type { Actor } from './context.js';

/** Appends one row through keygate_audit_append (before and after as JSON text, or null). */
export async function appendAudit(
  q: Queryable,
  e: {
    actor: { kind: Actor['kind']; id: string | null; name: string | null };
    action: string;
    targetType: string;
    targetIds: string[];
    organizationId: number | null;
    before: string | null;
    after: string | null;
    requestId: string | null;
  },
): Promise<void> {
  await q.query(`SELECT keygate_audit_append($1, $2, $3, $4, $5, $6::text[], $7::integer, $8::jsonb, $9::jsonb, $10)`, [
    e.actor.kind,
    e.actor.id,
    e.actor.name,
    e.action,
    e.targetType,
    e.targetIds,
    e.organizationId,
    e.before,
    e.after,
    e.requestId,
  ]);
}

export interface AuditFilter {
  organizationId?: number;
  actorKind?: Actor['kind'];
  actorId?: string;
  action?: string;
  targetType?: string;
  targetId?: string | number;
  since?: Date;
  until?: Date;
  /** Rows with an id below this one (the next page of a newest-first list). */
  beforeId?: number;
  limit?: number;
}

function auditWhere(f: AuditFilter): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (cond: (n: string) => string, v: unknown) => {
    params.push(v);
    where.push(cond(`$${params.length}`));
  };
  if (f.organizationId !== undefined) add((p) => `organization_id = ${p}`, f.organizationId);
  if (f.actorKind !== undefined) add((p) => `actor_kind = ${p}`, f.actorKind);
  if (f.actorId !== undefined) add((p) => `actor_id = ${p}`, f.actorId);
  if (f.action !== undefined)
    add((p) => (f.action!.endsWith('.') ? `starts_with(action, ${p})` : `action = ${p}`), f.action);
  if (f.targetType !== undefined) add((p) => `target_type = ${p}`, f.targetType);
  if (f.targetId !== undefined) add((p) => `target_ids @> ARRAY[${p}]::text[]`, String(f.targetId));
  if (f.since !== undefined) add((p) => `at >= ${p}`, f.since);
  if (f.until !== undefined) add((p) => `at < ${p}`, f.until);
  if (f.beforeId !== undefined) add((p) => `id < ${p}`, f.beforeId);
  return { sql: where.length ? `WHERE ${where.join(' AND ')}` : '', params };
}

/** One page of the matching rows, newest first. */
export async function auditRowsNewestFirst(q: Queryable, f: AuditFilter, limit: number): Promise<Row[]> {
  const { sql, params } = auditWhere(f);
  return q.query(`SELECT * FROM audit_events ${sql} ORDER BY id DESC LIMIT ${limit}`, params);
}

/** Up to `limit` matching rows with an id above `afterId`, oldest first. */
export async function auditRowsAfter(q: Queryable, f: AuditFilter, afterId: number, limit: number): Promise<Row[]> {
  const { sql, params } = auditWhere(f);
  params.push(afterId);
  const cond = `${sql ? `${sql} AND` : 'WHERE'} id > $${params.length}`;
  return q.query(`SELECT * FROM audit_events ${cond} ORDER BY id LIMIT ${limit}`, params);
}

/** Deletes through keygate_purge_audit; returns the count. */
export async function purgeAuditRows(q: Queryable, retentionDays: number): Promise<number> {
  const rows = await q.query(`SELECT keygate_purge_audit($1::integer) AS n`, [retentionDays]);
  return Number(rows[0].n);
}

/** The chain's anchor_hash, head_id and head_hash. */
export async function auditChain(q: Queryable): Promise<Row> {
  const [chain] = await q.query(`SELECT anchor_hash, head_id, head_hash FROM audit_chain`);
  return chain;
}

/** Up to `limit` rows after `afterId` with their id, prev_hash, hash and the text their hash covers. */
export async function auditChainRows(q: Queryable, afterId: number, limit: number): Promise<Row[]> {
  // The same text as keygate_audit_hash in migration 091: PostgreSQL renders the jsonb canonically.
  return q.query(
    `SELECT id, prev_hash, hash, jsonb_build_array(
         id, (extract(epoch FROM at) * 1000000)::bigint, db_user, actor_kind, actor_id, actor_name,
         action, target_type, to_jsonb(target_ids), organization_id, before, after, request_id
       )::text AS content
       FROM audit_events WHERE id > $1 ORDER BY id LIMIT ${limit}`,
    [afterId],
  );
}

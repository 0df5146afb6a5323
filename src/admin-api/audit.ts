// Reading the audit trail (the append-only audit_events table) for GET /api/audit: newest first,
// filtered by organization, action and actor kind, paged by id.
import type { Queryable } from '../db/types.js';
import { AdminApiError } from './errors.js';

export interface AuditReader {
  list(query: URLSearchParams, page: { limit: number; after: number }): Promise<{ items: unknown[]; nextCursor: string | null }>;
}

const ACTOR_KINDS = ['admin-token', 'user', 'cli', 'internal', 'seed'];

export function auditReader(db: Queryable): AuditReader {
  return {
    async list(query, { limit, after }) {
      const where: string[] = [];
      const params: unknown[] = [];
      const add = (sql: string, v: unknown) => {
        params.push(v);
        where.push(sql.replace('?', `$${params.length}`));
      };
      const org = query.get('organization');
      if (org) {
        if (!/^[1-9][0-9]{0,9}$/.test(org)) throw new AdminApiError('invalid_request', 'organization must be a positive integer id');
        add('organization_id = ?', Number(org));
      }
      const action = query.get('action');
      if (action) {
        if (!/^[a-z][a-z-]*(\.[a-z-]*)?$/.test(action) || action.length > 64) throw new AdminApiError('invalid_request', 'action must look like key.revoke (or key. for every key action)');
        if (action.endsWith('.') || !action.includes('.')) add('starts_with(action, ?)', action.includes('.') ? action : action + '.');
        else add('action = ?', action);
      }
      const actor = query.get('actor');
      if (actor) {
        if (!ACTOR_KINDS.includes(actor)) throw new AdminApiError('invalid_request', `actor must be one of ${ACTOR_KINDS.join(', ')}`);
        add('actor_kind = ?', actor);
      }
      // Newest first: the cursor is the last id seen, the next page holds the smaller ids.
      if (after > 0) add('id < ?', after);
      params.push(limit + 1);
      const rows = await db
        .query(`SELECT * FROM audit_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT $${params.length}`, params)
        .catch((err: Error & { code?: string }) => {
          if (err.code === '42P01') throw new AdminApiError('service_unavailable', 'this database has no audit trail yet (run keygate migrate)');
          throw err;
        });
      const items = rows.slice(0, limit).map((r) => ({
        id: Number(r.id),
        at: new Date(r.at).toISOString(),
        actor: { kind: r.actor_kind, id: r.actor_id, name: r.actor_name },
        action: r.action,
        target: { type: r.target_type, ids: r.target_ids, organizationId: r.organization_id },
        before: r.before,
        after: r.after,
        requestId: r.request_id,
      }));
      return { items, nextCursor: rows.length > limit ? String(items[items.length - 1].id) : null };
    },
  };
}

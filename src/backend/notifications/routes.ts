// Notification routes: GET .../notifications (spec: unreadOnly, cursor, limit), POST
// .../notifications/{id}/read and POST .../notifications/read-all (docs/decisions.md section 6).
//
// Paging is by cursor (see cursor.ts): `meta.next_cursor` is the cursor of the next page, or null on
// the last page. The page-style `pagination` block is informational: `per_page` is the limit,
// `total` the notifications matching the filter now, `page` 1 + (notifications served by the pages
// before this cursor) / limit, `has_more` exact.
import { ApiError } from '../../http/errors.js';
import { idParam, pagination, parse, queryObject, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { CursorCodec } from './cursor.js';
import { counts, listPage, markAllRead, markRead, toNotification } from './queries.js';
import { emptyBody, listQuery } from './schemas.js';
import { PG_INT_MAX } from '../../config/contract.js';

export function register(router: Router, svc: BackendServices): void {
  const base = '/v2/workspaces/{workspaceId}/notifications';
  const codec = new CursorCodec(svc.pepper);

  router.get(base, async (ctx) => {
    const workspaceId = idParam(ctx, 'workspaceId');
    const query = parse(listQuery, queryObject(ctx.query));
    const unreadOnly = query.unreadOnly === 'true';
    const limit = query.limit ?? 50;
    const now = svc.clock.now();
    let afterId: number | null = null;
    let offset = 0;
    if (query.cursor !== undefined) {
      const pos = codec.decode(query.cursor, { workspaceId, unreadOnly }, now);
      if (typeof pos === 'string') throw new ApiError('invalid_request', `cursor: ${pos}`, { field: 'cursor' });
      afterId = pos.afterId;
      offset = pos.offset;
    }
    const page = await listPage(ctx.db, workspaceId, unreadOnly, afterId, limit);
    const totals = await counts(ctx.db, workspaceId, unreadOnly);
    const last = page.rows[page.rows.length - 1];
    const nextCursor =
      page.hasMore && last
        ? codec.encode({ workspaceId, unreadOnly, afterId: last.id, offset: offset + page.rows.length }, now)
        : null;
    const pageMeta = pagination(Math.floor(offset / limit) + 1, limit, totals.total);
    return {
      data: page.rows.map(toNotification),
      meta: { next_cursor: nextCursor, has_more: page.hasMore, limit, unread_count: totals.unread },
      pagination: { ...pageMeta, has_more: page.hasMore },
    };
  });

  router.post(`${base}/read-all`, async (ctx) => {
    parse(emptyBody, ctx.body);
    const at = new Date(svc.clock.now());
    const updated = await markAllRead(ctx.db, idParam(ctx, 'workspaceId'), at);
    return { data: { updated, readAt: at.toISOString() } };
  });

  router.post(`${base}/{notificationId}/read`, async (ctx) => {
    parse(emptyBody, ctx.body);
    const id = idParam(ctx, 'notificationId');
    // Ids are int4 in the database: a larger canonical id names nothing (not a 500 from the cast).
    if (id > PG_INT_MAX) throw new ApiError('not_found', `No notification ${id} in this workspace.`);
    const row = await markRead(ctx.db, idParam(ctx, 'workspaceId'), id, new Date(svc.clock.now()));
    if (!row) throw new ApiError('not_found', `No notification ${id} in this workspace.`);
    return { data: toNotification(row) };
  });
}

// Analytics routes (docs/decisions.md section 6): overview, trends, leaderboard, deliverability, and the
// per-account deliverability and stats. Every query is scoped by the path workspace; the window is
// fixed (see queries.ts), so a query parameter trying to change it is refused as unknown.
import { ApiError } from '../../http/errors.js';
import { idParam, parse, queryObject, type Ctx, type Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { accountStats, deliverability, leaderboard, overview, trends, windowAt, windowJson } from './queries.js';
import { leaderboardQuery, noQuery } from './schemas.js';
import { PG_INT_MAX } from '../../config/contract.js';

// An account of another workspace is not found here, whoever owns it: every query is scoped by the
// path workspace, so an empty result is the 404 (an account with no sends still has its zero row).
const notFound = (accountId: number) => new ApiError('not_found', `No account ${accountId} in this workspace.`);

/** Ids are int4 in the database: a larger canonical id names nothing (not a 500 from the cast). */
function accountIdOf(ctx: Ctx): number {
  const id = idParam(ctx, 'accountId');
  if (id > PG_INT_MAX) throw notFound(id);
  return id;
}

export function register(router: Router, svc: BackendServices): void {
  const base = '/v2/workspaces/{workspaceId}';
  const win = () => windowAt(svc.clock.now());

  router.get(`${base}/analytics/overview`, async (ctx) => {
    parse(noQuery, queryObject(ctx.query));
    return { data: await overview(ctx.db, idParam(ctx, 'workspaceId'), win()) };
  });

  router.get(`${base}/analytics/trends`, async (ctx) => {
    parse(noQuery, queryObject(ctx.query));
    return { data: await trends(ctx.db, idParam(ctx, 'workspaceId'), win()) };
  });

  router.get(`${base}/analytics/leaderboard`, async (ctx) => {
    const query = parse(leaderboardQuery, queryObject(ctx.query));
    const period = win();
    return {
      data: await leaderboard(ctx.db, idParam(ctx, 'workspaceId'), period, query.limit ?? 10),
      meta: windowJson(period),
    };
  });

  router.get(`${base}/analytics/deliverability`, async (ctx) => {
    parse(noQuery, queryObject(ctx.query));
    const period = win();
    return { data: await deliverability(ctx.db, idParam(ctx, 'workspaceId'), period), meta: windowJson(period) };
  });

  router.get(`${base}/accounts/{accountId}/deliverability`, async (ctx) => {
    parse(noQuery, queryObject(ctx.query));
    const workspaceId = idParam(ctx, 'workspaceId');
    const accountId = accountIdOf(ctx);
    const period = win();
    const [row] = await deliverability(ctx.db, workspaceId, period, accountId);
    if (!row) throw notFound(accountId);
    return { data: row, meta: windowJson(period) };
  });

  router.get(`${base}/accounts/{accountId}/stats`, async (ctx) => {
    parse(noQuery, queryObject(ctx.query));
    const workspaceId = idParam(ctx, 'workspaceId');
    const accountId = accountIdOf(ctx);
    const stats = await accountStats(ctx.db, workspaceId, accountId, win());
    if (!stats) throw notFound(accountId);
    return { data: stats };
  });
}

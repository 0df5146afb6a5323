import { ApiError } from '../../http/errors.js';
import { safeEqual } from '../../http/safe-equal.js';
import type { Ctx } from '../router.js';

/** `/internal/*` routes: `Authorization: Bearer <INTERNAL_TOKEN>` (docs/decisions.md section 7). */
export function requireInternal(ctx: Ctx): void {
  const header = ctx.req.headers.authorization;
  const match = header ? /^Bearer (.+)$/.exec(header) : null;
  if (!match) throw new ApiError('unauthenticated', 'Missing internal bearer token.');
  if (!safeEqual(match[1], ctx.svc.config.internalToken)) throw new ApiError('forbidden', 'Invalid internal token.');
}

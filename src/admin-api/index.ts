// The admin API started from the services app.ts already holds (STYLE: build once, hand down), with the
// console's files at /.
import type http from 'node:http';
import type { Db } from '../db/index.js';
import { systemClock } from '../ops/clock.js';
import { createAdminApiServer } from './server.js';
import { ConsoleFiles } from './console-files.js';
import type { AdminApiDeps } from './deps.js';

export function startAdminApi(deps: Omit<AdminApiDeps, 'console'>): http.Server {
  return createAdminApiServer({ ...deps, console: new ConsoleFiles() });
}

const DEMO_NAME = 'all-in-one demo';

/**
 * The all-in-one demo's admin token (write), made at each start and printed once: the previous
 * start's demo token is revoked first, so a kept DATA_DIR does not collect live demo tokens.
 */
export async function demoAdminToken(db: Db, pepper: string): Promise<string> {
  const { createAdminToken, revokeAdminToken } = await import('../access/service/admin-tokens.js');
  const ctx = { db, pepper, clock: systemClock, actor: { kind: 'seed' as const } };
  const old = await db.query<{ id: number }>(`SELECT id FROM admin_tokens WHERE name = $1 AND revoked_at IS NULL`, [
    DEMO_NAME,
  ]);
  for (const t of old) await revokeAdminToken(ctx, t.id);
  return (await createAdminToken(ctx, { name: DEMO_NAME, role: 'write' })).token;
}

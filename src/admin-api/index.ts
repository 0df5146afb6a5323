// The admin API built from the services app.ts already holds (STYLE: build once, hand down).
import type http from 'node:http';
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { Plans } from '../config/plans.js';
import type { MinRole } from '../config/routes.js';
import type { SharedStores } from '../limits/types.js';
import { systemClock, type Clock } from '../ops/clock.js';
import type { TrustedProxies } from '../http/client-ip.js';
import { accessChangedVia } from '../access/versions.js';
import { createAdminApiServer } from './server.js';
import { ConsoleFiles } from './console-files.js';
import type { OrgTraffic } from './traffic.js';

export interface AdminApiServices {
  db: Db;
  pepper: string;
  clock: Clock;
  log: Logger;
  stores: SharedStores;
  traffic: OrgTraffic;
  trusted: TrustedProxies;
  plans(): Plans;
  scopes(): Record<string, MinRole>;
}

export function startAdminApi(s: AdminApiServices): http.Server {
  const accessChanged = accessChangedVia(s.stores.versions, s.log);
  return createAdminApiServer({
    db: s.db,
    pepper: s.pepper,
    clock: s.clock,
    log: s.log,
    stores: s.stores,
    traffic: s.traffic,
    trusted: s.trusted,
    plans: s.plans,
    serviceContext: (token, requestId) => ({
      db: s.db,
      actor: { kind: 'admin-token', id: String(token.id), name: token.name },
      requestId,
      clock: s.clock,
      pepper: s.pepper,
      scopes: s.scopes,
      plans: s.plans,
      accessChanged,
    }),
    console: new ConsoleFiles(),
  });
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

// What the admin API is built from: the services app.ts already holds (STYLE: build once, hand down).
// The server, its routes and the program that starts it all read this one shape.
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { Plans } from '../config/plans.js';
import type { MinRole } from '../config/routes.js';
import type { KeyProfile } from '../access/key-types.js';
import type { SharedStores } from '../limits/types.js';
import type { Clock } from '../ops/clock.js';
import type { TrustedProxies } from '../http/client-ip.js';
import { accessChangedVia } from '../access/versions.js';
import { serviceContext, type ServiceContext } from '../access/service/context.js';
import type { AuthenticatedToken } from '../access/service/admin-tokens.js';
import type { ConsoleFiles } from './console-files.js';
import type { OrgTraffic } from './traffic.js';

export interface AdminApiDeps {
  db: Db;
  pepper: string;
  clock: Clock;
  log: Logger;
  stores: SharedStores;
  traffic: OrgTraffic;
  trusted: TrustedProxies;
  plans(): Plans;
  scopes(): Record<string, MinRole | null>;
  /** The profile in force (PROFILE_FILE): the key types keys are made of; absent, the workspace API's. */
  profile?(): KeyProfile;
  /** The console's static files at /; without them / answers 404. */
  console?: ConsoleFiles;
}

/** The service layer's context for one request, with its admin token as the actor. */
export function serviceContexts(deps: AdminApiDeps): (token: AuthenticatedToken, requestId: string) => ServiceContext {
  const base = { ...deps, accessChanged: accessChangedVia(deps.stores.versions, deps.log) };
  return (token, requestId) =>
    serviceContext(base, { kind: 'admin-token', id: String(token.id), name: token.name }, requestId);
}

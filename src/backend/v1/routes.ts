// The /v1 partner interface (spec v1-partner-api.md; CONTRACT section 4). A partner key belongs to an
// organization and sees every account of its live workspaces; every query is scoped by
// ctx.identity.organizationId. GET /v1/rate-limit is answered by the gateway. The /v1/workspaces
// routes are registered by their own module.
import type { Router } from '../router.js';
import type { BackendServices } from '../services.js';
import { registerAccounts } from './accounts.js';
import { registerWarmup } from './warmup.js';
import { registerDeliverability } from './deliverability.js';
import { registerReports } from './reports.js';

export function register(router: Router, _svc: BackendServices): void {
  registerAccounts(router);
  registerWarmup(router);
  registerDeliverability(router);
  registerReports(router);
}

// The one list of the backend's resource domains. Each folder exports its domain (routes, jobs,
// schemas) from its index.ts; the router, the job runner (jobs.ts) and the schema registry (schemas.ts)
// all read this list. A domain's /v1 routes (the partner interface, docs/v1-interface.md) sit beside its
// /v2 routes in v1-routes.ts.
import type { BackendDomain } from './domain.js';
import type { Router } from './router.js';
import type { BackendServices } from './services.js';
import { accounts } from './accounts/index.js';
import { analytics } from './analytics/index.js';
import { billing } from './billing/index.js';
import { notifications } from './notifications/index.js';
import { oauth } from './oauth/index.js';
import { providerWorkspaces } from './provider-workspaces/index.js';
import { provisioning } from './provisioning/index.js';
import { tags } from './tags/index.js';
import { warmup } from './warmup/index.js';
import { workspace } from './workspace/index.js';
import * as apiKeysRoutes from './api-keys/routes.js';
import { jobs as apiKeysJobs } from './api-keys/jobs.js';
import * as internalRoutes from './internal/routes.js';

const apiKeys: BackendDomain = { name: 'api-keys', register: apiKeysRoutes.register, jobs: apiKeysJobs };
const internal: BackendDomain = { name: 'internal', register: internalRoutes.register };

export const DOMAINS: readonly BackendDomain[] = [
  accounts,
  warmup,
  tags,
  analytics,
  notifications,
  workspace,
  providerWorkspaces,
  provisioning,
  oauth,
  billing,
  apiKeys,
  internal,
];

export function registerDomains(router: Router, svc: BackendServices): void {
  for (const domain of DOMAINS) domain.register(router, svc);
}

// Every resource domain of the backend registers its routes here, one folder per domain; a domain's
// /v1 routes (the partner interface, CONTRACT section 4) sit beside its /v2 routes in v1-routes.ts.
import type { Router } from './router.js';
import type { BackendServices } from './services.js';
import * as accounts from './accounts/routes.js';
import * as accountsV1 from './accounts/v1-routes.js';
import * as deliverabilityV1 from './accounts/v1-deliverability.js';
import * as warmup from './warmup/routes.js';
import * as warmupV1 from './warmup/v1-routes.js';
import * as tags from './tags/routes.js';
import * as analytics from './analytics/routes.js';
import * as analyticsV1 from './analytics/v1-routes.js';
import * as notifications from './notifications/routes.js';
import * as workspace from './workspace/routes.js';
import * as providerWorkspaces from './provider-workspaces/routes.js';
import * as provisioning from './provisioning/routes.js';
import * as oauth from './oauth/routes.js';
import * as billing from './billing/routes.js';
import * as apiKeys from './api-keys/routes.js';
import * as internal from './internal/routes.js';

const DOMAINS = [
  accounts, warmup, tags, analytics, notifications, workspace, providerWorkspaces, provisioning, oauth, billing, apiKeys, internal,
  accountsV1, warmupV1, deliverabilityV1, analyticsV1,
];

export function registerDomains(router: Router, svc: BackendServices): void {
  for (const domain of DOMAINS) domain.register(router, svc);
}

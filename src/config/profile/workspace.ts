// The workspace API's profile when no file is read (the code and tests that need the contract's own
// interfaces): its two interfaces as the shipped profiles/workspace.yaml states them, which
// test/config/profile.test.ts holds equal, over the routes and plans of ROUTES_FILE and PLANS_FILE.
// A running program reads PROFILE_FILE instead (src/app/tables.ts), where an operator may change them.
import type { Plans } from '../plans.js';
import type { Routes } from '../routes.js';
import { IP_LIMIT, V1_LIMIT } from '../contract.js';
import type { InterfaceSpec, Profile } from './types.js';

const BOTH = { xRateLimit: true, ietf: true };

export const WORKSPACE_INTERFACES: readonly InterfaceSpec[] = [
  {
    id: 'v2',
    prefix: '/v2',
    model: 'workspace-v2',
    key: { header: 'authorization', bearer: true },
    keyTypes: [
      { name: 'workspace', prefix: 'svc_ws_' },
      { name: 'personal', prefix: 'svc_pk_' },
    ],
    addressLimit: IP_LIMIT,
    keyLimit: null,
    headers: BOTH,
    errors: { format: 'workspace' },
    identity: 'keygate',
  },
  {
    id: 'v1',
    prefix: '/v1',
    model: 'workspace-v1',
    key: { header: 'x-api-key', bearer: false },
    keyTypes: [{ name: 'partner', prefix: 'svc_v1_' }],
    addressLimit: null,
    keyLimit: V1_LIMIT,
    headers: BOTH,
    errors: { format: 'v1' },
    identity: 'keygate',
  },
];

export function workspaceProfile(routes: Routes, plans: Plans, file = 'profiles/workspace.yaml'): Profile {
  return { name: 'workspace', kind: 'workspace', file, interfaces: [...WORKSPACE_INTERFACES], routes, plans };
}

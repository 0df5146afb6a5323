// The bench seed: one organization whose keys stay accepted (its plan's budgets are huge in
// bench/plans.json), 10,000 more keys for the many-keys scenario, and one organization on the
// `free` plan, whose read budget is 1 a minute in bench/plans.json: its key is over its limit after one
// request, so scenario 5 answers 429 and nothing else does.
/** Every read scope of config/routes.json: the bench keys may call any candidate read route. */
export const ALL_READ_SCOPES = [
  'accounts:read',
  'warmup:read',
  'tags:read',
  'analytics:read',
  'notifications:read',
  'billing:read',
  'workspace:read',
];

export const ORG = 1;
export const WS = 100;
export const ACCOUNT = 5000;
export const LIMITED_WS = 200;
export const KEY_ID = 1000;
export const LIMITED_KEY_ID = 2000;
export const MANY_FIRST_ID = 100_000;

/** Deterministic bench-only secrets: svc_ws_ plus 32 characters of [A-Za-z0-9]. */
export const secretOf = (kind: 'one' | 'many' | 'limited', i = 0) =>
  `svc_ws_bench${kind}${String(i).padStart(8, '0')}`.padEnd(7 + 32, 'x');

export const ONE_KEY = secretOf('one');
export const LIMITED_KEY = secretOf('limited');
export const manyKeys = (n: number) => Array.from({ length: n }, (_, i) => secretOf('many', i));

export function benchSeed(manyKeyCount: number) {
  return {
    organizations: [
      { id: ORG, name: 'Bench', plan: 'growth', apiAccess: true, paused: false },
      { id: 2, name: 'Bench limited', plan: 'free', apiAccess: true, paused: false },
    ],
    users: [
      { id: 10, organizationId: ORG, email: 'owner@bench.test', orgRole: 'OWNER' },
      { id: 20, organizationId: 2, email: 'owner@limited.test', orgRole: 'OWNER' },
    ],
    workspaces: [
      { id: WS, organizationId: ORG, name: 'Bench' },
      { id: LIMITED_WS, organizationId: 2, name: 'Limited' },
    ],
    memberships: [
      { workspaceId: WS, userId: 10, role: 'OWNER' },
      { workspaceId: LIMITED_WS, userId: 20, role: 'OWNER' },
    ],
    apiKeys: [
      { id: KEY_ID, secret: ONE_KEY, name: 'bench', workspaceId: WS, role: 'ADMIN', scopes: ALL_READ_SCOPES },
      {
        id: LIMITED_KEY_ID,
        secret: LIMITED_KEY,
        name: 'limited',
        workspaceId: LIMITED_WS,
        role: 'ADMIN',
        scopes: ALL_READ_SCOPES,
      },
      ...manyKeys(manyKeyCount).map((secret, i) => ({
        id: MANY_FIRST_ID + i,
        secret,
        name: `many ${i}`,
        workspaceId: WS,
        role: 'ADMIN',
        scopes: ALL_READ_SCOPES,
      })),
    ],
    tags: [
      { id: 1, workspaceId: WS, name: 'priority' },
      { id: 2, workspaceId: WS, name: 'sales' },
      { id: 3, workspaceId: LIMITED_WS, name: 'other' },
    ],
    accounts: [
      {
        id: ACCOUNT,
        workspaceId: WS,
        emailAddress: 'a@bench.test',
        fromName: 'Ann',
        provider: 'google',
        status: 'active',
        verification: 'passed',
        warmupMaxLimit: 40,
        tagIds: [1],
      },
      {
        id: 5200,
        workspaceId: LIMITED_WS,
        emailAddress: 'b@limited.test',
        fromName: 'Bob',
        provider: 'google',
        status: 'active',
        verification: 'passed',
        warmupMaxLimit: 10,
      },
    ],
  };
}

// The console's first page (docs/usage.md, Reading): the deployment at a glance and a search. The
// database's facts come from the service layer (src/access/service/usage-history.ts); the monthly
// quotas' use is read from the gateways' own month counters without spending, as GET /api/keys/{id}/usage
// reads them.
import { overviewFacts, organizationsWithQuota, searchAccess } from '../access/service/usage-history.js';
import { monthCounter } from '../limits/counters.js';
import type { AdminApiDeps } from './deps.js';
import { service, type AdminRoute } from './route-kit.js';
import { bindingOf, holdsScopes, keyTypesOf } from '../access/key-types.js';
import { profileOf } from '../access/service/keys.js';
import { OverviewSchema, SearchSchema } from './usage-schemas.js';
import { z } from 'zod';

const EXPIRING_WITHIN_MS = 7 * 86_400_000;
const EXPIRING_MAX = 100;
const QUOTAS_MAX = 100;
/** Month counters read at once: a few round trips in flight, not one per organization. */
const QUOTA_READS_IN_FLIGHT = 16;

/** Organizations whose monthly quota is 80 % or more spent, the most spent first. */
async function quotasNearEnd(deps: AdminApiDeps, orgs: { id: number; name: string; monthlyQuota: number }[]) {
  const near: { organizationId: number; name: string; used: number; limit: number; percent: number; reset: number }[] =
    [];
  let next = 0;
  const reader = async () => {
    while (next < orgs.length) {
      const o = orgs[next++];
      const [state] = await deps.stores.limiter.spend([monthCounter(o.id, o.monthlyQuota)!], 0);
      // 80 % in integers: used / limit >= 4 / 5.
      if (state.used * 5 >= state.limit * 4)
        near.push({
          organizationId: o.id,
          name: o.name,
          used: state.used,
          limit: state.limit,
          percent: Math.floor((state.used * 100) / state.limit),
          reset: state.reset,
        });
    }
  };
  await Promise.all(Array.from({ length: Math.min(QUOTA_READS_IN_FLIGHT, orgs.length) }, reader));
  return near
    .sort((a, b) => b.used / b.limit - a.used / a.limit || a.organizationId - b.organizationId)
    .slice(0, QUOTAS_MAX);
}

export const OVERVIEW_ROUTES: AdminRoute[] = [
  {
    method: 'GET',
    path: '/api/overview',
    role: 'read',
    summary:
      "The deployment at a glance: organizations and keys counted, today's requests (UTC) admitted and refused by outcome from the usage history, the monthly quotas 80 % or more spent, and the keys expiring within 7 days.",
    status: 200,
    response: OverviewSchema,
    handle: async ({ ctx, deps }) => {
      const facts = await service(
        overviewFacts(ctx, { expiringWithinMs: EXPIRING_WITHIN_MS, expiringLimit: EXPIRING_MAX }),
      );
      const quotas = await quotasNearEnd(deps, await service(organizationsWithQuota(ctx)));
      return { ...facts, quotas };
    },
  },
  {
    method: 'GET',
    path: '/api/search',
    role: 'read',
    summary:
      'Organizations and keys by name (any part, any case), id, or key hint (any part, or the start of a secret): at most 20 of each.',
    query: [
      {
        name: 'q',
        description: 'What to look for, 1 to 100 characters (required).',
        schema: { type: 'string', minLength: 1, maxLength: 100 },
      },
    ],
    status: 200,
    response: SearchSchema,
    handle: async ({ ctx, query }) => service(searchAccess(ctx, query.get('q') ?? '')),
  },
  // What the console's forms pick from: a key's type and scopes, and an organization's plan.
  {
    method: 'GET',
    path: '/api/profile',
    role: 'read',
    summary:
      "The profile in force (PROFILE_FILE): its name, its kind (workspace or rest) and the key types keys are made of, each with its secrets' prefix and what binds it.",
    status: 200,
    response: z.object({
      name: z.string(),
      kind: z.enum(['workspace', 'rest']),
      keyTypes: z.array(
        z.object({
          name: z.string(),
          prefix: z.string(),
          binding: z
            .enum(['workspace', 'user', 'organization'])
            .describe(
              "What a key of the type is made for: a workspace (workspaceId), a user (userId), an organization (organizationId; a rest profile's consumer).",
            ),
          scopes: z.boolean().describe('Whether its keys hold scopes.'),
        }),
      ),
    }),
    handle: async ({ ctx }) => {
      const p = profileOf(ctx);
      return {
        name: p.name,
        kind: p.kind,
        keyTypes: keyTypesOf(p).map((t) => ({
          name: t.name,
          prefix: t.prefix,
          binding: bindingOf(t),
          scopes: holdsScopes(t),
        })),
      };
    },
  },
  {
    method: 'GET',
    path: '/api/scopes',
    role: 'read',
    summary: "The route table's scopes, each with the least role a key needs to hold it.",
    status: 200,
    response: z.object({ items: z.array(z.object({ scope: z.string(), minRole: z.string().nullable() })) }),
    handle: async ({ deps }) => ({
      items: Object.entries(deps.scopes()).map(([scope, minRole]) => ({ scope, minRole })),
    }),
  },
  {
    method: 'GET',
    path: '/api/plans',
    role: 'read',
    summary:
      "The plans in force (the profile's; PLANS_FILE for the workspace API): their per-minute budgets and monthly quota (null: none).",
    status: 200,
    response: z.object({
      items: z.array(
        z.object({
          id: z.string(),
          label: z.string(),
          read: z.number().int(),
          write: z.number().int(),
          bulk: z.number().int(),
          monthlyQuota: z.number().int().nullable(),
        }),
      ),
    }),
    handle: async ({ deps }) => ({
      items: Object.entries(deps.plans()).map(([id, p]) => ({
        id,
        label: p.label,
        read: p.read,
        write: p.write,
        bulk: p.bulk,
        monthlyQuota: p.monthlyQuota ?? null,
      })),
    }),
  },
];

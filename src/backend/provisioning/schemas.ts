// Request schemas of provisioning and budgets (/v2 routes without a workspace segment).
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';
import { workspaceName } from '../workspace/index.js';
import { pgId, pgInt } from '../../db/storable.js';

export const budget = pgInt(0);

export const createBody = z.object({ name: workspaceName, dailyWarmupBudget: budget.optional() }).strict();

export const quotasBody = z
  .object({
    quotas: z
      .array(z.object({ workspaceId: pgId, dailyWarmupBudget: budget }).strict())
      .min(1)
      .max(1000)
      .superRefine((qs, ctx) => {
        const seen = new Set<number>();
        qs.forEach((quota, index) => {
          if (seen.has(quota.workspaceId))
            ctx.addIssue({
              code: 'custom',
              path: [index, 'workspaceId'],
              message: `workspace ${quota.workspaceId} is listed twice`,
            });
          seen.add(quota.workspaceId);
        });
      }),
  })
  .strict();

/** A workspace element of `GET /v2/workspaces`: `role` is the role the key acts at (spec). */
export const workspaceElement = z.looseObject({ id: z.number().int(), name: z.string(), role: z.string().nullable() });

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  'GET /v2/workspaces': { response: z.array(workspaceElement) },
  'POST /v2/workspaces': { body: createBody, status: [201] },
  'GET /v2/workspaces/quotas': {},
  'PATCH /v2/workspaces/quotas': { body: quotasBody },
};

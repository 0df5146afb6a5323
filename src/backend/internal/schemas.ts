// Request schema of the internal admin routes (docs/decisions.md section 7; not part of /v1 or /v2).
import { z } from 'zod';
import { PLAN_NAME } from '../../config/plans.js';
import { pgInt } from '../../db/storable.js';

export const orgPatch = z
  .object({
    // A plan of PLANS_FILE (checked by the service layer against the plans loaded now).
    plan: z.string().regex(PLAN_NAME, 'must be a plan name').nullable().optional(),
    // Per-customer limits (src/access/service/limits.ts): a number sets, null goes back to the plan's.
    limits: z
      .object({
        read: pgInt(1).nullable().optional(),
        write: pgInt(1).nullable().optional(),
        bulk: pgInt(1).nullable().optional(),
        monthlyQuota: z
          .union([z.number().int().min(1).max(1e12), z.literal('none')])
          .nullable()
          .optional(),
      })
      .strict()
      .refine((l) => Object.keys(l).length > 0, 'at least one limit is required')
      .optional(),
    apiAccess: z.boolean().optional(),
    paused: z.boolean().optional(),
    warmupCap: pgInt(0).nullable().optional(),
    partnerCallback: z.object({ url: z.string().url(), verified: z.boolean() }).strict().nullable().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required');

// Request schema of the internal admin routes (CONTRACT section 7; not part of /v1 or /v2).
import { z } from 'zod';
import { PLAN_IDS } from '../../config/plans.js';
import { pgInt } from '../validation.js';

export const orgPatch = z
  .object({
    plan: z.enum(PLAN_IDS).nullable().optional(),
    apiAccess: z.boolean().optional(),
    paused: z.boolean().optional(),
    warmupCap: pgInt(0).nullable().optional(),
    partnerCallback: z.object({ url: z.string().url(), verified: z.boolean() }).strict().nullable().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required');

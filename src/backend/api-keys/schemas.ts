// Request schema of the internal /api-keys routes (CONTRACT section 7; not part of /v1 or /v2).
import { z } from 'zod';
import { ROLES } from '../../config/routes.js';
import { pgId } from '../validation.js';

const SCOPE = z.string().regex(/^[a-z]+:[a-z]+$/);

export const createSchema = z
  .object({
    name: z.string().trim().min(1).max(100),
    type: z.enum(['workspace', 'personal', 'partner']),
    workspaceId: pgId.optional(),
    role: z.enum(ROLES).optional(),
    scopes: z.array(SCOPE).max(32).default([]),
  })
  .strict();

// Request schemas of the internal /api-keys routes (docs/decisions.md section 7; not part of /v1 or /v2).
import { z } from 'zod';
import { ROLES } from '../../config/routes.js';
import { pgId } from '../../db/storable.js';
import { PG_INT_MAX } from '../../config/contract.js';
import { keyExpiry, rotateKeyBody } from '../../access/key-schemas.js';

const SCOPE = z.string().regex(/^[a-z]+:[a-z]+$/);
/** An instant with its zone (RFC 3339), or null for never. */
const expiresAt = keyExpiry.nullable();
/** A small JSON object the upstream receives in the signed identity; the 1 KiB bound is the service's. */
const metadata = z.record(z.string(), z.unknown()).nullable();

export const createSchema = z
  .object({
    name: z.string().trim().min(1).max(100),
    type: z.enum(['workspace', 'personal', 'partner']),
    workspaceId: pgId.optional(),
    role: z.enum(ROLES).optional(),
    scopes: z.array(SCOPE).max(32).default([]),
    expiresAt: expiresAt.optional(),
    metadata: metadata.optional(),
  })
  .strict();

export const updateSchema = z
  .object({
    name: z.string().trim().min(1).max(100).optional(),
    expiresAt: expiresAt.optional(),
    metadata: metadata.optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required');

/** `graceSeconds`: how long the replaced secret keeps working (default 24 h; 0 stops it at once). */
export const rotateSchema = rotateKeyBody;

export const listQuery = z.object({
  status: z.enum(['active', 'expired', 'revoked']).optional(),
  type: z.enum(['workspace', 'personal', 'partner']).optional(),
  workspaceId: z.coerce.number().int().positive().max(PG_INT_MAX).optional(),
});

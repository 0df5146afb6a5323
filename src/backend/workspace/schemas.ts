// Request bodies of the workspace domain: strict, so an unknown field is 400 invalid_request naming it.
import { z } from 'zod';
import { ROLES } from '../../config/routes.js';

/** A workspace name: trimmed, 1 to 100 characters, no control characters. */
export const workspaceName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters');

export const renameBody = z.object({ name: workspaceName }).strict();

export const role = z.enum(ROLES);

export const inviteBody = z
  .object({
    email: z.string().trim().toLowerCase().pipe(z.email().max(254)),
    role,
  })
  .strict();

export const reroleBody = z.object({ role }).strict();

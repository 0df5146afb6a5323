// Request bodies of the workspace domain: strict, so an unknown field is 400 invalid_request naming it.
import { z } from 'zod';
import { ROLES } from '../../config/routes.js';
import type { SchemaRegistry } from '../domain.js';

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

/** A member of the roster (members.ts view). */
export const member = z.looseObject({
  userId: z.number().int(),
  email: z.string(),
  role,
  orgRole: z.enum(['OWNER', 'MEMBER']),
  joinedAt: z.string(),
});

const WS = '/v2/workspaces/{workspaceId}';

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  [`GET ${WS}`]: {},
  [`PATCH ${WS}`]: { body: renameBody },
  [`GET ${WS}/members`]: { response: z.array(member) },
  [`POST ${WS}/members`]: { body: inviteBody, response: member.extend({ userCreated: z.boolean() }), status: [201] },
  [`PATCH ${WS}/members/{userId}`]: { body: reroleBody, response: member },
  [`DELETE ${WS}/members/{userId}`]: { response: member.extend({ removed: z.literal(true) }) },
};

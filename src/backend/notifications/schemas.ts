// Request schemas of the notifications domain (spec: unreadOnly, cursor, limit).
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';

export const listQuery = z
  .object({
    unreadOnly: z.enum(['true', 'false'], { message: 'must be true or false' }).optional(),
    limit: z
      .string()
      .regex(/^[0-9]{1,3}$/, 'must be an integer from 1 to 100')
      .transform(Number)
      .pipe(z.number().int().min(1, 'must be an integer from 1 to 100').max(100, 'must be an integer from 1 to 100'))
      .optional(),
    cursor: z.string().min(1).max(600).optional(),
  })
  .strict();

/** The mark-read routes take no body; an empty object is tolerated. */
export const emptyBody = z.object({}).strict().optional();

/** The spec's Notification resource. */
export const notification = z.looseObject({
  id: z.number().int(),
  type: z.string(),
  severity: z.string(),
  category: z.string(),
  title: z.string(),
  body: z.string(),
  emailAccountId: z.number().int().nullable(),
  readAt: z.string().nullable(),
  createdAt: z.string(),
  isRead: z.boolean(),
});

const BASE = '/v2/workspaces/{workspaceId}/notifications';

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  [`GET ${BASE}`]: { query: listQuery, response: z.array(notification), paginated: true },
  [`POST ${BASE}/read-all`]: { body: emptyBody },
  [`POST ${BASE}/{notificationId}/read`]: { body: emptyBody },
};

// Request schemas of the partner OAuth routes of /v2: strict, and no refresh-token field (spec).
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';

export const provider = z.enum(['google', 'microsoft']);

export const connectBody = z
  .object({
    provider,
    emailAddress: z.string().trim().pipe(z.email().max(254)),
    accessToken: z.string().min(1).max(8192),
    expiresAt: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 timestamp' }),
  })
  .strict();

export const consentBody = z
  .object({
    provider,
    redirectUri: z.string().max(2048).optional(),
    loginHint: z.string().trim().pipe(z.email().max(254)).optional(),
  })
  .strict();

const WS = '/v2/workspaces/{workspaceId}';

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  // 201 when the mailbox is new, 200 when the partner reconnects one it already holds.
  [`POST ${WS}/accounts/oauth`]: { body: connectBody, status: [200, 201] },
  [`POST ${WS}/accounts/oauth-url`]: { body: consentBody },
};

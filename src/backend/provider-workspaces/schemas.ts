// Request schemas of the provider workspace routes of both interfaces (see service.ts for the rules).
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';

export const registerBody = z
  .object({
    provider: z.enum(['google', 'microsoft']),
    adminEmail: z.string().max(254).nullable().optional(),
    tenantId: z.string().max(255).nullable().optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    // Required / forbidden by provider (v1 spec, POST /workspaces); a malformed value is 422 later.
    if (body.provider === 'google') {
      if (body.adminEmail == null)
        ctx.addIssue({ code: 'custom', path: ['adminEmail'], message: 'required when provider is google' });
      if (body.tenantId != null)
        ctx.addIssue({ code: 'custom', path: ['tenantId'], message: 'not accepted when provider is google' });
    } else {
      if (body.tenantId == null)
        ctx.addIssue({ code: 'custom', path: ['tenantId'], message: 'required when provider is microsoft' });
      if (body.adminEmail != null)
        ctx.addIssue({ code: 'custom', path: ['adminEmail'], message: 'not accepted when provider is microsoft' });
    }
  });

const intIn = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]{1,6}$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, `must be an integer from ${min} to ${max}`)
        .max(max, `must be an integer from ${min} to ${max}`),
    );

export const previewQuery = z
  .object({
    search: z.string().max(254).optional(),
    // comma-separated domain list
    domain: z.string().max(2000).optional(),
    page: intIn(1, 100_000).optional(),
    limit: intIn(1, 100).optional(),
  })
  .strict();

/** The sync routes take no body; an empty object is tolerated. */
export const emptyBody = z.object({}).strict().optional();

export const noQuery = z.object({}).strict();

/** The spec's Provider workspace resource (/v2). */
export const providerWorkspace = z.looseObject({
  id: z.number().int(),
  provider: z.enum(['google', 'microsoft']),
  adminEmail: z.string().nullable(),
  tenantId: z.string().nullable(),
  status: z.string(),
  lastSyncedAt: z.string().nullable(),
  domains: z.array(z.looseObject({ domain: z.string(), mailboxCount: z.number().int() })),
  createdAt: z.string(),
});

/** The /v1 registration record: `workspaceId` is the registration's id as a string (v1 spec). */
export const v1Registration = z.looseObject({
  workspaceId: z.string(),
  provider: z.enum(['google', 'microsoft']),
  adminEmail: z.string().nullable(),
  tenantId: z.string().nullable(),
  status: z.string(),
});

const BASE = '/v2/workspaces/{workspaceId}/provider-workspaces';

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  [`GET ${BASE}`]: { query: noQuery, response: z.array(providerWorkspace) },
  [`POST ${BASE}`]: { body: registerBody, response: providerWorkspace, status: [201] },
  [`GET ${BASE}/{providerWorkspaceId}/preview`]: { query: previewQuery, paginated: true },
  [`POST ${BASE}/{providerWorkspaceId}/sync`]: { body: emptyBody, status: [201] },
  [`GET ${BASE}/{providerWorkspaceId}/sync`]: { query: noQuery },
  'POST /v1/workspaces': { body: registerBody, response: v1Registration, status: [201] },
  'GET /v1/workspaces/{workspaceId:str}/preview': { query: previewQuery },
  'POST /v1/workspaces/{workspaceId:str}/sync': { body: emptyBody, status: [201] },
  'GET /v1/workspaces/{workspaceId:str}/sync': { query: noQuery },
};

// The request (and, where the handler's shape is plain, response) schemas of every route of /v1 and
// /v2, by `METHOD path` as config/routes.json writes it. The handlers parse with these same schemas and
// the API description (src/openapi/) is generated from them, so the two cannot drift.
import type { z } from 'zod';
import { schemas as accounts } from './accounts/schemas.js';
import { schemas as accountsV1 } from './accounts/v1-schemas.js';
import { schemas as analytics } from './analytics/schemas.js';
import { schemas as analyticsV1 } from './analytics/v1-schemas.js';
import { schemas as billing } from './billing/schemas.js';
import { schemas as notifications } from './notifications/schemas.js';
import { schemas as oauth } from './oauth/schemas.js';
import { schemas as providerWorkspaces } from './provider-workspaces/schemas.js';
import { schemas as provisioning } from './provisioning/schemas.js';
import { schemas as tags } from './tags/schemas.js';
import { schemas as warmup } from './warmup/schemas.js';
import { schemas as warmupV1 } from './warmup/v1-schemas.js';
import { schemas as workspace } from './workspace/schemas.js';

export interface OperationSchemas {
  /** Path parameters beyond what the path pattern says (ids are canonical decimals, CONTRACT section 3). */
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  /** The `data` of a success (Envelope A or B), or the whole /v1 body. Absent: an open object. */
  response?: z.ZodType;
  /** Success statuses, when not just 200. */
  status?: number[];
  /** The success envelope, when not the interface's own (the tag list answers in Envelope A). */
  envelope?: 'A' | 'csv';
  /** Page-style lists carry Envelope B's `pagination`. */
  paginated?: boolean;
}

export type SchemaRegistry = Record<string, OperationSchemas>;

export const SCHEMAS: SchemaRegistry = {
  ...accounts, ...accountsV1, ...analytics, ...analyticsV1, ...billing, ...notifications, ...oauth, ...providerWorkspaces,
  ...provisioning, ...tags, ...warmup, ...warmupV1, ...workspace,
};

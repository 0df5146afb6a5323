// Request schemas of the warmup domain. The settings PATCH and the activity query live beside the code
// that applies them (settings.ts, activity.ts); they are listed here with the others.
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';
import { patchSettingsSchema } from './settings.js';
import { activityQuerySchema } from './activity.js';

export { activityQuerySchema, patchSettingsSchema };

/** The mailbox checker's outcome (internal route). */
export const verificationSchema = z.object({ result: z.enum(['passed', 'failed']) }).strict();

/** The warmup actions take no fields; an object with fields is refused like any unknown field. */
export const actionBody = z.object({}).strict();

/** The spec's warmup settings (GET and PATCH answer them); `warmupLevel` no longer exists. */
export const warmupSettings = z.looseObject({
  accountId: z.number().int(),
  warmupMaxLimit: z.number().int(),
  warmupCurrentLimit: z.number().int(),
  warmupMinLimit: z.number().int(),
  // null: no cap (unlimited, not zero).
  maxWarmupPerAccount: z.number().int().nullable(),
  replyRateMode: z.string(),
  replyRateCustom: z.boolean(),
  replyRate: z.number(),
  replyRateMin: z.number(),
  replyRateMax: z.number(),
  threadTendencyMin: z.number(),
  threadTendencyMax: z.number(),
});

const ACC = '/v2/workspaces/{workspaceId}/accounts/{accountId}';

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  [`GET ${ACC}/warmup/settings`]: { response: warmupSettings },
  [`PATCH ${ACC}/warmup/settings`]: { body: patchSettingsSchema, response: warmupSettings },
  [`POST ${ACC}/warmup/enable`]: { body: actionBody.optional() },
  [`POST ${ACC}/warmup/pause`]: { body: actionBody.optional() },
  [`POST ${ACC}/warmup/resume`]: { body: actionBody.optional() },
  [`GET ${ACC}/warmup/activity`]: { query: activityQuerySchema },
};

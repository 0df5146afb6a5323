// The schemas of the /v1 warmup routes (v1-routes.ts): requests strict (an unknown field is 400
// invalid_request naming it), and the response bodies whose shape the spec shows (fields beyond those
// shown may follow).
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';
import { emptyBody, idList } from '../mailbox/index.js';
import { DAYS, isTimeZone } from '../time.js';

export const STRATEGIES = ['progressive', 'flat', 'randomize', 'smart'] as const;
export const LANGUAGES = [
  'English',
  'Spanish',
  'French',
  'German',
  'Portuguese',
  'Chinese',
  'Japanese',
  'Arabic',
  'Hindi',
  'Russian',
  'Italian',
  'Dutch',
] as const;

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** One day's sending window, local wall-clock: `{day: 'monday', fromHour, fromMinute, toHour, toMinute}`. */
const timeSlot = z
  .object({ day: z.enum(DAYS), fromHour: int(0, 23), fromMinute: int(0, 59), toHour: int(0, 23), toMinute: int(0, 59) })
  .strict()
  .refine((s) => s.fromHour * 60 + s.fromMinute < s.toHour * 60 + s.toMinute, {
    message: 'fromHour:fromMinute must be earlier than toHour:toMinute',
  });

export const patchBody = z
  .object({
    strategy: z.enum(STRATEGIES).optional(),
    maxSendingLimit: int(0, 100).optional(),
    warmUpInitialSendingLimit: int(0, 100).optional(),
    increaseEmailsByNumber: int(0, 30).optional(),
    replyRate: z.number().min(0).max(65).optional(),
    timeZone: z.string().refine(isTimeZone, { message: 'must be an IANA time zone name' }).optional(),
    timeSlots: z
      .array(timeSlot)
      .min(1)
      .max(7)
      .refine((a) => new Set(a.map((s) => s.day)).size === a.length, { message: 'each day at most once' })
      .optional(),
    warmupLanguage: z.enum(LANGUAGES).optional(),
    upcomingContentConfig: z
      .object({
        industry: z.string().trim().min(1).max(100),
        topics: z.array(z.string().trim().min(1).max(100)).max(20),
      })
      .strict()
      .optional(),
    googleVolume: int(1, 98).optional(),
    microsoftVolume: int(1, 98).optional(),
    othersVolume: int(1, 98).optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (Object.keys(body).length === 0)
      ctx.addIssue({ code: 'custom', path: [], message: 'at least one setting is required' });
    // Enforced only when strategy is sent in the same request (spec, PATCH table).
    if (
      (body.strategy === 'flat' || body.strategy === 'randomize') &&
      body.increaseEmailsByNumber !== undefined &&
      body.increaseEmailsByNumber !== 0
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['increaseEmailsByNumber'],
        message: `must be 0 when strategy is ${body.strategy}`,
      });
    }
    const vols = [body.googleVolume, body.microsoftVolume, body.othersVolume];
    const sent = vols.filter((v) => v !== undefined).length;
    if (sent > 0 && sent < 3) {
      const missing = (['googleVolume', 'microsoftVolume', 'othersVolume'] as const).find(
        (k) => body[k] === undefined,
      )!;
      ctx.addIssue({
        code: 'custom',
        path: [missing],
        message: 'googleVolume, microsoftVolume and othersVolume are sent together',
      });
    } else if (sent === 3 && vols.reduce((x, y) => x! + y!, 0) !== 100) {
      ctx.addIssue({
        code: 'custom',
        path: ['googleVolume'],
        message: 'googleVolume + microsoftVolume + othersVolume must be exactly 100',
      });
    }
  });

export const bulkWarmupBody = z.object({ action: z.enum(['start', 'stop']), emailAccountIds: idList(50) }).strict();

export const warmupSettingsV1 = z.looseObject({
  emailAccountId: z.number().int(),
  strategy: z.enum(STRATEGIES),
  timeZone: z.string(),
  warmupStatus: z.string(),
  warmupLanguage: z.string(),
  upcomingContentConfig: z.looseObject({ industry: z.string(), topics: z.array(z.string()) }),
  googleVolumePercentage: z.number(),
  microsoftVolumePercentage: z.number(),
  othersVolumePercentage: z.number(),
  maxSendingLimit: z.number(),
  warmUpInitialSendingLimit: z.number(),
  increaseEmailsByNumber: z.number(),
  replyRate: z.number(),
  dailySendingLimit: z.number(),
  dailyReceivingLimit: z.number(),
});

/** Today's warmup activity (Get Warmup Status and Warmup Activity History are the same route). */
export const warmupStatus = z.looseObject({
  emailAccountId: z.number().int(),
  date: z.string(),
  current: z.string(),
  strategy: z.string(),
  dailySendingLimit: z.number(),
  sent: z.number(),
  received: z.number(),
  replied: z.number(),
  spam: z.number(),
  undelivered: z.number(),
  warmupScore: z.number(),
  outreachReadinessStatus: z.string(),
});

/** The routes of this domain on /v1 and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  'GET /v1/warmup-settings/{emailAccountId}': { response: warmupSettingsV1 },
  'PATCH /v1/warmup-settings/{emailAccountId}': { body: patchBody },
  'GET /v1/warmup-status/{emailAccountId}': { response: warmupStatus },
  'GET /v1/warmup-activity/{emailAccountId}': { response: warmupStatus },
  'POST /v1/warmup/{emailAccountId}/start': { body: emptyBody.optional() },
  'POST /v1/warmup/{emailAccountId}/stop': { body: emptyBody.optional() },
  'POST /v1/warmup/bulk': { body: bulkWarmupBody },
};

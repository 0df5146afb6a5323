// What the admin API's webhook operations accept and answer (./webhook-routes.ts); the OpenAPI document
// is generated from these, as from ./schemas.ts.
import { z } from 'zod';
import { isStorableText, pgId } from '../db/storable.js';
import { EVENT_TYPES } from '../access/events/outbox.js';
import { DELIVERY_STATUSES, DESCRIPTION_MAX, URL_MAX } from '../access/events/endpoints.js';

const time = z.string().describe('ISO 8601 time');
const eventType = z.enum(EVENT_TYPES);
const storable = { message: 'must not hold a NUL character or a lone surrogate' };

const url = z
  .string()
  .min(8)
  .max(URL_MAX)
  .refine(isStorableText, storable)
  .describe('Where events are POSTed: an absolute http or https URL, without credentials.');
const description = z.string().max(DESCRIPTION_MAX).refine(isStorableText, storable);
const eventTypes = z
  .array(eventType)
  .max(EVENT_TYPES.length)
  .describe('The event types sent to this endpoint; empty: every type.');

export const WebhookEndpointSchema = z.object({
  id: pgId,
  url: z.string(),
  description: z.string(),
  eventTypes: z.array(eventType),
  enabled: z.boolean(),
  secretHint: z.string().describe("The signing secret's first characters; never enough to sign with."),
  createdAt: time,
  updatedAt: time,
  secretRotatedAt: time.nullable(),
  deliveries: z
    .object({ pending: z.number().int(), delivered: z.number().int(), failed: z.number().int() })
    .describe("The endpoint's deliveries by status."),
});

export const CreatedWebhookEndpointSchema = WebhookEndpointSchema.extend({
  secret: z
    .string()
    .describe('The signing secret (`whsec_` + base64), shown only in this answer: give it to the receiver.'),
});

export const CreateWebhookBody = z
  .object({ url, description: description.optional(), eventTypes: eventTypes.optional() })
  .strict();

export const UpdateWebhookBody = z
  .object({
    url: url.optional(),
    description: description.optional(),
    eventTypes: eventTypes.optional(),
    enabled: z.boolean().optional().describe('false: no new deliveries, and the pending ones wait.'),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: 'give url, description, eventTypes or enabled' });

export const WebhookDeliverySchema = z.object({
  id: pgId,
  endpointId: pgId,
  eventType,
  messageId: z.string().describe('The webhook-id header: the same for every attempt and replay of the event.'),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int(),
  nextAttemptAt: time.nullable().describe('Pending only: the next attempt (while one runs, the end of its lease).'),
  retryUntil: time.describe('Attempts stop then, and the delivery is failed.'),
  lastAttemptAt: time.nullable(),
  lastStatus: z.number().int().nullable().describe("The last attempt's HTTP status; null when there was no answer."),
  lastError: z.string().nullable(),
  deliveredAt: time.nullable(),
  createdAt: time,
  replayOf: pgId.nullable().describe('The delivery this one sends again by hand.'),
});

// The admin API's webhook endpoints and their deliveries (docs/events.md): the operations of
// src/access/events/endpoints.ts, audited there, with the admin token as the actor. The signing secret
// is answered by creation and rotation only.
import type { z } from 'zod';
import {
  createEndpoint,
  DELIVERY_STATUSES,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  replayDelivery,
  rotateSecret,
  updateEndpoint,
} from '../access/events/endpoints.js';
import { PAGE, oneOfQuery, pageOf, paging, service, type AdminRoute } from './route-kit.js';
import { page } from './schemas.js';
import {
  CreatedWebhookEndpointSchema,
  CreateWebhookBody,
  UpdateWebhookBody,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
} from './webhook-schemas.js';

export const WEBHOOK_ROUTES: AdminRoute[] = [
  {
    method: 'GET',
    path: '/api/webhooks',
    role: 'read',
    summary: 'Webhook endpoints, by id, with their deliveries counted by status: never a secret.',
    query: PAGE,
    status: 200,
    response: page(WebhookEndpointSchema),
    handle: async ({ ctx, query }) => {
      const { limit, after } = paging(query);
      return pageOf(await service(listEndpoints(ctx, after, limit + 1)), limit);
    },
  },
  {
    method: 'POST',
    path: '/api/webhooks',
    role: 'write',
    summary:
      'Add a webhook endpoint: events of its types (all when none given) are POSTed to it signed per Standard Webhooks; the answer holds its signing secret, the only time it is shown.',
    body: CreateWebhookBody,
    status: 201,
    response: CreatedWebhookEndpointSchema,
    handle: async ({ ctx, body }) => {
      const { endpoint, secret } = await service(createEndpoint(ctx, body as z.infer<typeof CreateWebhookBody>));
      return { ...endpoint, secret };
    },
  },
  {
    method: 'GET',
    path: '/api/webhooks/{id}',
    role: 'read',
    summary: 'One webhook endpoint.',
    status: 200,
    response: WebhookEndpointSchema,
    handle: async ({ ctx, params }) => service(getEndpoint(ctx, params.id)),
  },
  {
    method: 'PATCH',
    path: '/api/webhooks/{id}',
    role: 'write',
    summary:
      "Change a webhook endpoint's URL, description or event types, or disable it (no new deliveries; the pending ones wait until it is enabled again).",
    body: UpdateWebhookBody,
    status: 200,
    response: WebhookEndpointSchema,
    handle: async ({ ctx, params, body }) =>
      service(updateEndpoint(ctx, params.id, body as z.infer<typeof UpdateWebhookBody>)),
  },
  {
    method: 'POST',
    path: '/api/webhooks/{id}/rotate-secret',
    role: 'write',
    summary:
      'A new signing secret, shown only in this answer; every attempt from now on is signed with it, the old one no longer.',
    status: 200,
    response: CreatedWebhookEndpointSchema,
    handle: async ({ ctx, params }) => {
      const { endpoint, secret } = await service(rotateSecret(ctx, params.id));
      return { ...endpoint, secret };
    },
  },
  {
    method: 'GET',
    path: '/api/webhooks/{id}/deliveries',
    role: 'read',
    summary:
      "The endpoint's deliveries, newest first: status, attempts, the last attempt's HTTP status or error, the next attempt.",
    query: [
      {
        name: 'status',
        description: 'Only deliveries in this status.',
        schema: { type: 'string', enum: [...DELIVERY_STATUSES] },
      },
      ...PAGE,
    ],
    status: 200,
    response: page(WebhookDeliverySchema),
    handle: async ({ ctx, params, query }) => {
      const { limit, after } = paging(query);
      const status = oneOfQuery(query, 'status', DELIVERY_STATUSES);
      // Newest first: the cursor is the last id seen, the next page holds the smaller ids.
      return pageOf(
        await service(listDeliveries(ctx, params.id, { beforeId: after, limit: limit + 1, status })),
        limit,
      );
    },
  },
  {
    method: 'POST',
    path: '/api/webhooks/{id}/deliveries/{deliveryId}/replay',
    role: 'write',
    summary:
      'Send a delivery again, by hand: a new delivery of the same event (same webhook-id, so a receiver can drop a repeat), due now and retried for a day, whatever became of the one it repeats.',
    status: 201,
    response: WebhookDeliverySchema,
    handle: async ({ ctx, params }) => service(replayDelivery(ctx, params.id, params.deliveryId)),
  },
];

// Webhook endpoints as operators manage them (the admin API's /api/webhooks, docs/events.md): each change
// validates, writes with its audit row in one transaction (the secret never in the row), and answers the
// endpoint without its secret, which only creation and rotation show, once.
import type { Row } from '../../db/types.js';
import { isoOrNull } from '../../db/time.js';
import { recordAudit } from '../service/audit.js';
import { nowOf, ServiceError, type ServiceContext } from '../service/context.js';
import { EVENT_TYPES, RETRY_WINDOW_MS, type EventType } from './outbox.js';
import { generateWebhookSecret, secretHint } from './signing.js';
import {
  deliveryCounts,
  deliveryRow,
  deliveryRows,
  endpointRow,
  endpointRows,
  insertEndpoint,
  insertReplay,
  notifyEvents,
  rotateEndpointSecret,
  updateEndpointRow,
} from './queries.js';

export const URL_MAX = 2048;
export const DESCRIPTION_MAX = 500;
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface EndpointView {
  id: number;
  url: string;
  description: string;
  /** Empty: every type. */
  eventTypes: EventType[];
  enabled: boolean;
  secretHint: string;
  createdAt: string;
  updatedAt: string;
  secretRotatedAt: string | null;
  deliveries: Record<DeliveryStatus, number>;
}

export interface DeliveryView {
  id: number;
  endpointId: number;
  eventType: string;
  /** The webhook-id header: the same for every attempt and every replay of the event. */
  messageId: string;
  status: DeliveryStatus;
  attempts: number;
  /** The next attempt (pending only); while an attempt runs, the end of its lease. */
  nextAttemptAt: string | null;
  retryUntil: string;
  /** When the last finished attempt's outcome was known; its HTTP status, or its error. */
  lastAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
  replayOf: number | null;
}

function endpointView(r: Row, counts: Row[] = []): EndpointView {
  const deliveries = { pending: 0, delivered: 0, failed: 0 };
  for (const c of counts) if (c.endpoint_id === r.id) deliveries[c.status as DeliveryStatus] = c.n;
  return {
    id: r.id,
    url: r.url,
    description: r.description,
    eventTypes: r.event_types,
    enabled: r.enabled,
    secretHint: r.secret_hint,
    createdAt: isoOrNull(r.created_at)!,
    updatedAt: isoOrNull(r.updated_at)!,
    secretRotatedAt: isoOrNull(r.secret_rotated_at),
    deliveries,
  };
}

function deliveryView(r: Row): DeliveryView {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    eventType: r.event_type,
    messageId: r.message_id,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.status === 'pending' ? isoOrNull(r.next_attempt_at) : null,
    retryUntil: isoOrNull(r.retry_until)!,
    lastAttemptAt: isoOrNull(r.last_attempt_at),
    lastStatus: r.last_status,
    lastError: r.last_error,
    deliveredAt: isoOrNull(r.delivered_at),
    createdAt: isoOrNull(r.created_at)!,
    replayOf: r.replay_of,
  };
}

/** An absolute http(s) URL without credentials (they would show in every answer and log line). */
export function checkUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ServiceError('invalid', 'url must be an absolute http or https URL', 'url', 'url');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new ServiceError('invalid', 'url must be an http or https URL', 'url', 'url');
  if (u.username || u.password)
    throw new ServiceError('invalid', 'url must not hold credentials; the signature authenticates', 'url', 'url');
  if (raw.length > URL_MAX) throw new ServiceError('invalid', `url may be at most ${URL_MAX} characters`, 'url', 'url');
  return raw;
}

export function checkEventTypes(raw: string[]): EventType[] {
  const unknown = raw.find((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown !== undefined)
    throw new ServiceError(
      'invalid',
      `eventTypes: unknown type ${JSON.stringify(unknown)}; known: ${EVENT_TYPES.join(', ')}`,
      'eventTypes',
      'eventTypes',
    );
  return [...new Set(raw)] as EventType[];
}

function checkDescription(raw: string): string {
  if (raw.length > DESCRIPTION_MAX)
    throw new ServiceError('invalid', `description may be at most ${DESCRIPTION_MAX} characters`, 'description');
  return raw;
}

function found(r: Row | null, id: number): Row {
  if (!r) throw new ServiceError('not_found', `no webhook endpoint ${id}`, 'no_webhook');
  return r;
}

function audit(ctx: ServiceContext, q: Parameters<typeof recordAudit>[0], action: string, ids: number[], o: object) {
  return recordAudit(q, ctx, { action, targetType: 'webhook', targetIds: ids, organizationId: null, ...o });
}

export interface CreateEndpointInput {
  url: string;
  description?: string;
  eventTypes?: string[];
}

export async function createEndpoint(
  ctx: ServiceContext,
  input: CreateEndpointInput,
): Promise<{ endpoint: EndpointView; secret: string }> {
  const url = checkUrl(input.url);
  const description = checkDescription(input.description ?? '');
  const eventTypes = checkEventTypes(input.eventTypes ?? []);
  const secret = generateWebhookSecret();
  const endpoint = await ctx.db.tx(async (q) => {
    const row = await insertEndpoint(q, {
      url,
      description,
      eventTypes,
      secret,
      secretHint: secretHint(secret),
      now: nowOf(ctx),
    });
    const view = endpointView(row);
    await audit(ctx, q, 'webhook.create', [view.id], { after: view });
    return view;
  });
  return { endpoint, secret };
}

export async function listEndpoints(ctx: ServiceContext, afterId: number, limit: number): Promise<EndpointView[]> {
  const rows = await endpointRows(ctx.db, afterId, limit);
  const counts = rows.length
    ? await deliveryCounts(
        ctx.db,
        rows.map((r) => r.id),
      )
    : [];
  return rows.map((r) => endpointView(r, counts));
}

export async function getEndpoint(ctx: ServiceContext, id: number): Promise<EndpointView> {
  const row = found(await endpointRow(ctx.db, id), id);
  return endpointView(row, await deliveryCounts(ctx.db, [id]));
}

export interface UpdateEndpointInput {
  url?: string;
  description?: string;
  eventTypes?: string[];
  enabled?: boolean;
}

/** A disabled endpoint gets no new deliveries and its pending ones wait; enabled again, they are sent. */
export async function updateEndpoint(
  ctx: ServiceContext,
  id: number,
  input: UpdateEndpointInput,
): Promise<EndpointView> {
  if (!Object.keys(input).length)
    throw new ServiceError('invalid', 'nothing to change: give url, description, eventTypes or enabled', 'empty');
  const url = input.url === undefined ? undefined : checkUrl(input.url);
  const description = input.description === undefined ? undefined : checkDescription(input.description);
  const eventTypes = input.eventTypes === undefined ? undefined : checkEventTypes(input.eventTypes);
  const view = await ctx.db.tx(async (q) => {
    const cur = found(await endpointRow(q, id, true), id);
    const row = await updateEndpointRow(q, id, {
      url: url ?? cur.url,
      description: description ?? cur.description,
      eventTypes: eventTypes ?? cur.event_types,
      enabled: input.enabled ?? cur.enabled,
      now: nowOf(ctx),
    });
    const after = endpointView(row);
    await audit(ctx, q, 'webhook.update', [id], { before: endpointView(cur), after });
    return after;
  });
  return { ...view, deliveries: (await getEndpoint(ctx, id)).deliveries };
}

/** A new secret at once: every attempt from now is signed with it (there is no overlap). */
export async function rotateSecret(
  ctx: ServiceContext,
  id: number,
): Promise<{ endpoint: EndpointView; secret: string }> {
  const secret = generateWebhookSecret();
  await ctx.db.tx(async (q) => {
    const cur = found(await endpointRow(q, id, true), id);
    const row = await rotateEndpointSecret(q, id, { secret, secretHint: secretHint(secret), now: nowOf(ctx) });
    await audit(ctx, q, 'webhook.rotate-secret', [id], {
      before: { secretHint: cur.secret_hint },
      after: { secretHint: row.secret_hint },
    });
  });
  return { endpoint: await getEndpoint(ctx, id), secret };
}

export async function listDeliveries(
  ctx: ServiceContext,
  endpointId: number,
  f: { beforeId: number; limit: number; status?: DeliveryStatus },
): Promise<DeliveryView[]> {
  found(await endpointRow(ctx.db, endpointId), endpointId);
  return (await deliveryRows(ctx.db, endpointId, f)).map(deliveryView);
}

/**
 * Send a delivery again by hand: a new delivery of the same event (the same webhook-id, so a receiver
 * that has it already can drop it) to the same endpoint, due now, with a day of retries of its own,
 * whatever became of the one it repeats (delivered, failed, or still being retried).
 */
export async function replayDelivery(ctx: ServiceContext, endpointId: number, id: number): Promise<DeliveryView> {
  const now = nowOf(ctx);
  const replayId = await ctx.db.tx(async (q) => {
    found(await endpointRow(q, endpointId, true), endpointId);
    const d = await deliveryRow(q, endpointId, id);
    if (!d) throw new ServiceError('not_found', `no delivery ${id} of webhook endpoint ${endpointId}`, 'no_delivery');
    const newId = await insertReplay(q, d, now, new Date(now.getTime() + RETRY_WINDOW_MS));
    await notifyEvents(q);
    await audit(ctx, q, 'webhook.replay', [endpointId, newId], {
      before: { delivery: id },
      after: { delivery: newId },
    });
    return newId;
  });
  return deliveryView((await deliveryRow(ctx.db, endpointId, replayId))!);
}

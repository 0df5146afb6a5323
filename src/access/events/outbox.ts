// The outbox (docs/events.md): an event is written in the transaction of the change it tells of, with a
// pending delivery per endpoint subscribed to its type, so that a change that rolls back tells nobody and
// one that commits is delivered at least once. A payload holds ids, names and hints: never a secret or
// a hash. The shapes the service layer hands in are declared here by the fields read, so that this module
// imports nothing of the operations that call it; the service layer's own events are in
// ./service-events.ts (a gateway process, which writes quota and expiry events, loads none of it).
import type { Queryable } from '../../db/types.js';
import { insertEvent, notifyEvents } from './queries.js';

export const EVENT_TYPES = [
  'key.created',
  'key.rotated',
  'key.revoked',
  'key.expiring',
  'key.expired',
  'quota.threshold',
  'limits.changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** A delivery is retried for a day from its creation (docs/events.md, Retries). */
export const RETRY_WINDOW_MS = 86_400_000;

export interface NewEvent {
  type: EventType;
  organizationId: number | null;
  at: Date;
  data: Record<string, unknown>;
  /** Once-only events: a second event with the same mark is not written. */
  mark?: string;
}

/** The Standard Webhooks body: `{ type, timestamp, data }`. */
export function payloadOf(e: Pick<NewEvent, 'type' | 'at' | 'data'>) {
  return { type: e.type, timestamp: e.at.toISOString(), data: e.data };
}

/** Write an event and its deliveries with `q` (the change's transaction). False: its mark was taken. */
export async function emitEvent(q: Queryable, e: NewEvent): Promise<boolean> {
  const { id, deliveries } = await insertEvent(q, {
    type: e.type,
    organizationId: e.organizationId,
    occurredAt: e.at,
    payload: JSON.stringify(payloadOf(e)),
    mark: e.mark ?? null,
    retryUntil: new Date(e.at.getTime() + RETRY_WINDOW_MS),
  });
  if (deliveries > 0) await notifyEvents(q);
  return id !== null;
}

/** The key fields a payload carries (a KeyView has them all). */
export interface KeyFields {
  id: number;
  organizationId: number;
  workspaceId: number | null;
  userId: number | null;
  name: string;
  type: string;
  hint: string;
  role: string | null;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  status: string;
  previousSecret: { hint: string; expiresAt: string } | null;
}

export function keyData(k: KeyFields) {
  return {
    id: k.id,
    organizationId: k.organizationId,
    workspaceId: k.workspaceId,
    userId: k.userId,
    name: k.name,
    type: k.type,
    hint: k.hint,
    role: k.role,
    scopes: k.scopes,
    status: k.status,
    createdAt: k.createdAt,
    expiresAt: k.expiresAt,
  };
}

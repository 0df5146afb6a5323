// The SQL of events and webhooks (migration 110): the outbox, the endpoints, the deliveries' claims and
// results, and the scans. The modules beside it keep the rules and call these.
import type { Queryable, Row } from '../../db/types.js';

// ---------------------------------------------------------------------------------------------
// The outbox

export interface EventInsert {
  type: string;
  organizationId: number | null;
  occurredAt: Date;
  payload: string;
  mark: string | null;
  retryUntil: Date;
}

/**
 * One event and a pending delivery to every enabled endpoint subscribed to its type, in one statement.
 * A mark already taken inserts nothing: `id` is then null.
 */
export async function insertEvent(q: Queryable, e: EventInsert): Promise<{ id: number | null; deliveries: number }> {
  const [row] = await q.query(
    `WITH e AS (
       INSERT INTO events (type, organization_id, occurred_at, payload, mark)
       VALUES ($1, $2, $3, $4::jsonb, $5)
       ON CONFLICT (mark) DO NOTHING
       RETURNING id),
     d AS (
       INSERT INTO webhook_deliveries (event_id, endpoint_id, next_attempt_at, retry_until, created_at)
       SELECT e.id, w.id, $3, $6, $3 FROM e
         JOIN webhook_endpoints w ON w.enabled AND (cardinality(w.event_types) = 0 OR $1 = ANY (w.event_types))
       RETURNING 1)
     SELECT (SELECT id FROM e) AS id, (SELECT count(*) FROM d)::integer AS deliveries`,
    [e.type, e.organizationId, e.occurredAt, e.payload, e.mark, e.retryUntil],
  );
  return { id: row.id ?? null, deliveries: row.deliveries };
}

/** Wakes the delivery loops listening on the schema's channel once the transaction commits. */
export async function notifyEvents(q: Queryable): Promise<void> {
  await q.query(`SELECT pg_notify('keygate_events_' || current_schema(), '')`);
}

/** Whether a mark is taken (the quota's thresholds check before they build a payload). */
export async function markTaken(q: Queryable, mark: string): Promise<boolean> {
  return (await q.query(`SELECT 1 FROM events WHERE mark = $1`, [mark])).length > 0;
}

export async function organizationName(q: Queryable, id: number): Promise<string | null> {
  return (await q.query(`SELECT name FROM organizations WHERE id = $1`, [id]))[0]?.name ?? null;
}

/** Events whose deliveries are all done (or that had none), older than `before`. */
export async function deleteOldEvents(q: Queryable, before: Date): Promise<number> {
  const rows = await q.query(
    `DELETE FROM events e WHERE e.occurred_at < $1
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
     RETURNING 1`,
    [before],
  );
  return rows.length;
}

// ---------------------------------------------------------------------------------------------
// The scans of keys' expiries

/** The scan's lock, one per schema: false when another instance holds it (until its transaction ends). */
export async function tryScanLock(q: Queryable): Promise<boolean> {
  const [row] = await q.query(`SELECT pg_try_advisory_xact_lock(7355611, hashtext(current_schema())) AS got`);
  return row.got === true;
}

// The mark of a key's expiry, per expiry instant: a key whose expiry changes is warned of again.
const EXPIRY_MARK = (kind: string) =>
  `'${kind}:' || k.id || ':' || (floor(extract(epoch FROM k.expires_at) * 1000))::bigint`;

/** Live keys expiring within (now, until] not yet warned of for their current expiry, with that mark. */
export async function keysExpiring(q: Queryable, now: Date, until: Date, limit: number): Promise<Row[]> {
  return q.query(
    `SELECT k.id, ${EXPIRY_MARK('key.expiring')} AS mark FROM api_keys k
      WHERE k.revoked_at IS NULL AND k.expires_at > $1 AND k.expires_at <= $2
        AND NOT EXISTS (SELECT 1 FROM events e WHERE e.mark = ${EXPIRY_MARK('key.expiring')})
      ORDER BY k.expires_at, k.id LIMIT $3`,
    [now, until, limit],
  );
}

/** Live keys whose expiry passed in (since, now] and not yet told of, with that mark. */
export async function keysExpired(q: Queryable, since: Date, now: Date, limit: number): Promise<Row[]> {
  return q.query(
    `SELECT k.id, ${EXPIRY_MARK('key.expired')} AS mark FROM api_keys k
      WHERE k.revoked_at IS NULL AND k.expires_at > $1 AND k.expires_at <= $2
        AND NOT EXISTS (SELECT 1 FROM events e WHERE e.mark = ${EXPIRY_MARK('key.expired')})
      ORDER BY k.expires_at, k.id LIMIT $3`,
    [since, now, limit],
  );
}

// ---------------------------------------------------------------------------------------------
// Endpoints

const ENDPOINT_COLUMNS = `id, url, description, event_types, enabled, secret_hint, created_at, updated_at, secret_rotated_at`;

export async function insertEndpoint(
  q: Queryable,
  e: { url: string; description: string; eventTypes: string[]; secret: string; secretHint: string; now: Date },
): Promise<Row> {
  const [row] = await q.query(
    `INSERT INTO webhook_endpoints (url, description, event_types, secret, secret_hint, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${ENDPOINT_COLUMNS}`,
    [e.url, e.description, e.eventTypes, e.secret, e.secretHint, e.now],
  );
  return row;
}

/** An endpoint without its secret, or null. */
export async function endpointRow(q: Queryable, id: number, lock = false): Promise<Row | null> {
  const rows = await q.query(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

/** Endpoints by id after `afterId`, without their secrets. */
export async function endpointRows(q: Queryable, afterId: number, limit: number): Promise<Row[]> {
  return q.query(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id > $1 ORDER BY id LIMIT $2`, [
    afterId,
    limit,
  ]);
}

/** Each endpoint's deliveries counted by status. */
export async function deliveryCounts(q: Queryable, ids: number[]): Promise<Row[]> {
  return q.query(
    `SELECT endpoint_id, status, count(*)::integer AS n FROM webhook_deliveries
      WHERE endpoint_id = ANY ($1::integer[]) GROUP BY endpoint_id, status`,
    [ids],
  );
}

export async function updateEndpointRow(
  q: Queryable,
  id: number,
  f: { url: string; description: string; eventTypes: string[]; enabled: boolean; now: Date },
): Promise<Row> {
  const [row] = await q.query(
    `UPDATE webhook_endpoints SET url = $2, description = $3, event_types = $4, enabled = $5, updated_at = $6
      WHERE id = $1 RETURNING ${ENDPOINT_COLUMNS}`,
    [id, f.url, f.description, f.eventTypes, f.enabled, f.now],
  );
  return row;
}

export async function rotateEndpointSecret(
  q: Queryable,
  id: number,
  f: { secret: string; secretHint: string; now: Date },
): Promise<Row> {
  const [row] = await q.query(
    `UPDATE webhook_endpoints SET secret = $2, secret_hint = $3, secret_rotated_at = $4, updated_at = $4
      WHERE id = $1 RETURNING ${ENDPOINT_COLUMNS}`,
    [id, f.secret, f.secretHint, f.now],
  );
  return row;
}

// ---------------------------------------------------------------------------------------------
// Deliveries

const DELIVERY_COLUMNS = `d.id, d.event_id, d.endpoint_id, d.status, d.attempts, d.next_attempt_at, d.retry_until,
  d.last_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at, d.replay_of,
  e.type AS event_type, e.message_id`;

/** An endpoint's deliveries, newest first, below `beforeId` (0: from the newest), optionally of one status. */
export async function deliveryRows(
  q: Queryable,
  endpointId: number,
  f: { beforeId: number; limit: number; status?: string },
): Promise<Row[]> {
  return q.query(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.endpoint_id = $1 AND ($2::integer = 0 OR d.id < $2) AND ($3::text IS NULL OR d.status = $3)
      ORDER BY d.id DESC LIMIT $4`,
    [endpointId, f.beforeId, f.status ?? null, f.limit],
  );
}

export async function deliveryRow(q: Queryable, endpointId: number, id: number): Promise<Row | null> {
  const rows = await q.query(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.endpoint_id = $1 AND d.id = $2`,
    [endpointId, id],
  );
  return rows[0] ?? null;
}

/** A new pending delivery repeating `of`: its own attempts and its own day of retries. */
export async function insertReplay(q: Queryable, of: Row, now: Date, retryUntil: Date): Promise<number> {
  const [row] = await q.query(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, next_attempt_at, retry_until, created_at, replay_of)
     VALUES ($1, $2, $3, $4, $3, $5) RETURNING id`,
    [of.event_id, of.endpoint_id, now, retryUntil, of.id],
  );
  return row.id;
}

/**
 * Claim up to `limit` due deliveries of enabled endpoints: each is leased until `leaseUntil` (its next
 * attempt moves there) and its attempt counted. SKIP LOCKED: instances claiming at once take different rows.
 */
export async function claimDue(q: Queryable, now: Date, leaseUntil: Date, limit: number): Promise<Row[]> {
  return q.query(
    `UPDATE webhook_deliveries d SET next_attempt_at = $2, attempts = d.attempts + 1
      WHERE d.id IN (
        SELECT c.id FROM webhook_deliveries c JOIN webhook_endpoints w ON w.id = c.endpoint_id AND w.enabled
         WHERE c.status = 'pending' AND c.next_attempt_at <= $1
         ORDER BY c.next_attempt_at, c.id LIMIT $3
         FOR UPDATE OF c SKIP LOCKED)
      RETURNING d.id, d.event_id, d.endpoint_id, d.attempts, d.retry_until`,
    [now, leaseUntil, limit],
  );
}

/** What a claimed delivery sends: the event's body and id, the endpoint's URL and secret. */
export async function sendingOf(q: Queryable, eventId: number, endpointId: number): Promise<Row | null> {
  const rows = await q.query(
    `SELECT e.message_id, e.payload::text AS body, w.url, w.secret
       FROM events e, webhook_endpoints w WHERE e.id = $1 AND w.id = $2`,
    [eventId, endpointId],
  );
  return rows[0] ?? null;
}

/**
 * The outcome of the attempt numbered `attempts`: written only while the delivery is still that claim
 * (a sender whose lease ran out and whose delivery was claimed again writes nothing).
 */
export async function recordAttempt(
  q: Queryable,
  id: number,
  attempts: number,
  r: {
    status: 'pending' | 'delivered' | 'failed';
    httpStatus: number | null;
    error: string | null;
    next: Date | null;
    at: Date;
  },
): Promise<boolean> {
  const rows = await q.query(
    `UPDATE webhook_deliveries SET status = $3, last_status = $4, last_error = $5, next_attempt_at = $6, last_attempt_at = $7,
            delivered_at = CASE WHEN $3 = 'delivered' THEN $7::timestamptz END
      WHERE id = $1 AND attempts = $2 AND status = 'pending' RETURNING 1`,
    [id, attempts, r.status, r.httpStatus, r.error, r.next, r.at],
  );
  return rows.length > 0;
}

// Notifications of a workspace: list (keyset by id descending), mark one read, mark all read,
// `notify()` for other domains that raise one, and the seed file's notifications.
import type { Queryable } from '../../db/index.js';
import { isoOrNull } from '../../db/time.js';

export interface NotificationRow {
  id: number;
  type: string;
  severity: string;
  category: string;
  title: string;
  body: string;
  email_account_id: number | null;
  read_at: Date | null;
  created_at: Date;
}

const COLUMNS = `id, type, severity, category, title, body, email_account_id, read_at, created_at`;

/** The Notification resource of the spec. */
export function toNotification(row: NotificationRow) {
  return {
    id: row.id,
    type: row.type,
    severity: row.severity,
    category: row.category,
    title: row.title,
    body: row.body,
    emailAccountId: row.email_account_id,
    readAt: isoOrNull(row.read_at),
    createdAt: new Date(row.created_at).toISOString(),
    isRead: row.read_at !== null,
  };
}

/** One page: up to `limit` rows with id < afterId (or the newest), plus whether more follow. */
export async function listPage(
  db: Queryable,
  workspaceId: number,
  unreadOnly: boolean,
  afterId: number | null,
  limit: number,
) {
  const rows = await db.query<NotificationRow>(
    `SELECT ${COLUMNS} FROM notifications
      WHERE workspace_id = $1 AND ($2::boolean = false OR read_at IS NULL) AND ($3::int IS NULL OR id < $3)
      ORDER BY id DESC LIMIT $4`,
    [workspaceId, unreadOnly, afterId, limit + 1],
  );
  const hasMore = rows.length > limit;
  return { rows: rows.slice(0, limit), hasMore };
}

/** How many notifications match the filter, and how many of the workspace are unread. */
export async function counts(db: Queryable, workspaceId: number, unreadOnly: boolean) {
  const [totals] = await db.query(
    `SELECT (count(*) FILTER (WHERE $2::boolean = false OR read_at IS NULL))::int AS total,
            (count(*) FILTER (WHERE read_at IS NULL))::int AS unread
       FROM notifications WHERE workspace_id = $1`,
    [workspaceId, unreadOnly],
  );
  return totals as { total: number; unread: number };
}

/** Mark one read; the first readAt is kept when it was read already. Null when not in the workspace. */
export async function markRead(db: Queryable, workspaceId: number, id: number, at: Date) {
  const rows = await db.query<NotificationRow>(
    `UPDATE notifications SET read_at = coalesce(read_at, $3::timestamptz)
      WHERE id = $1 AND workspace_id = $2
      RETURNING ${COLUMNS}`,
    [id, workspaceId, at.toISOString()],
  );
  return rows[0] ?? null;
}

/** Mark every unread notification of the workspace read; returns how many changed. */
export async function markAllRead(db: Queryable, workspaceId: number, at: Date): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `WITH u AS (UPDATE notifications SET read_at = $2::timestamptz WHERE workspace_id = $1 AND read_at IS NULL RETURNING 1)
     SELECT count(*)::int AS n FROM u`,
    [workspaceId, at.toISOString()],
  );
  return row.n;
}

export interface NewNotification {
  workspaceId: number;
  type: string;
  severity: 'critical' | 'warning' | 'info';
  category: string;
  title: string;
  body: string;
  emailAccountId?: number | null;
}

/** What a notification says and where, in the column order of the INSERTs below. */
function contentOf(notification: Omit<NewNotification, 'severity'> & { severity: string }): unknown[] {
  return [
    notification.workspaceId,
    notification.type,
    notification.severity,
    notification.category,
    notification.title,
    notification.body,
    notification.emailAccountId ?? null,
  ];
}

/** Raise a notification (used by other domains, e.g. a finished provider sync). Returns its id. */
export async function notify(db: Queryable, notification: NewNotification, at: Date): Promise<number> {
  const [row] = await db.query<{ id: number }>(
    `INSERT INTO notifications (workspace_id, type, severity, category, title, body, email_account_id, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::timestamptz) RETURNING id`,
    [...contentOf(notification), at.toISOString()],
  );
  return row.id;
}

/** A notification of the seed file (any severity), created `minutesAgo` before the seed is applied. */
export interface SeedNotification extends Omit<NewNotification, 'severity'> {
  id: number;
  severity: string;
  read: boolean;
  minutesAgo: number;
}

/** Writes the seed's notification under its id, over any row of that id (a read one keeps when it was read). */
export async function upsertSeedNotification(db: Queryable, notification: SeedNotification): Promise<void> {
  await db.query(
    `INSERT INTO notifications (id, workspace_id, type, severity, category, title, body, email_account_id, read_at, created_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8, CASE WHEN $9::boolean THEN now() END, now() - make_interval(mins => $10::int))
        ON CONFLICT (id) DO UPDATE SET workspace_id=$2, type=$3, severity=$4, category=$5, title=$6, body=$7, email_account_id=$8,
          read_at = CASE WHEN $9::boolean THEN coalesce(notifications.read_at, now()) END`,
    [notification.id, ...contentOf(notification), notification.read, notification.minutesAgo],
  );
}

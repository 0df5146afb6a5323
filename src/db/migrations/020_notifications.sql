-- Notifications (backend/notifications): the list pages by keyset on id descending; the unread filter
-- walks its own partial index so `unreadOnly=true` stays cheap however many read ones pile up.
CREATE INDEX notifications_unread_idx ON notifications (workspace_id, id DESC) WHERE read_at IS NULL;

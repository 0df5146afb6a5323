-- Partner OAuth mailboxes (spec, partner OAuth route): how a mailbox was connected and the state of the
-- token refresh through the partner callback. (The automatic start is the warmup domain's auto_warmup.)

-- 'partner' when connected through POST /v2/workspaces/{wid}/accounts/oauth (or /v1's equivalent).
ALTER TABLE accounts ADD COLUMN oauth_source text CHECK (oauth_source IS NULL OR oauth_source IN ('partner'));

-- The refresh job claims a row until this time, so two backends never refresh one token at once.
ALTER TABLE accounts ADD COLUMN oauth_refresh_claimed_until timestamptz;

-- After a failed refresh, the next attempt waits until this time (exponential backoff).
ALTER TABLE accounts ADD COLUMN oauth_refresh_next_at timestamptz;

ALTER TABLE accounts ADD COLUMN oauth_refresh_failures integer NOT NULL DEFAULT 0;

ALTER TABLE accounts ADD COLUMN oauth_refresh_error text;

ALTER TABLE accounts ADD COLUMN oauth_refreshed_at timestamptz;

CREATE INDEX accounts_oauth_expiry_idx ON accounts (oauth_expires_at) WHERE oauth_source IS NOT NULL;

-- Warmup domain (issue 3): automatic start for partner-OAuth mailboxes, and the index of the job that
-- applies lowered maxima at each mailbox's local midnight.

-- true for mailboxes connected through the partner OAuth route until warmup first starts: it starts without an enable call
-- once DNS and the send-and-receive check pass (spec, States).
ALTER TABLE accounts ADD COLUMN auto_warmup boolean NOT NULL DEFAULT false;

ALTER TABLE accounts ADD COLUMN warmup_started_at timestamptz;

ALTER TABLE accounts ADD CONSTRAINT accounts_pending_max_min CHECK (pending_max_limit IS NULL OR pending_max_limit >= 5);

CREATE INDEX accounts_pending_due_idx ON accounts (pending_effective_at) WHERE pending_effective_at IS NOT NULL;

-- The auto-start job's candidates: few rows at any time.
CREATE INDEX accounts_auto_start_idx ON accounts (id) WHERE warmup_requested OR auto_warmup;

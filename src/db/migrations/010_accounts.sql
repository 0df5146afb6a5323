-- Accounts domain (issue 3): the IMAP side of an SMTP/IMAP connection, the send-and-receive check's
-- timestamp, and the last live DNS check of each account's sending domain.

-- The IMAP settings of a mailbox connected over SMTP/IMAP ({host, port, username, password, secure}),
-- next to the SMTP ones in accounts.smtp. Passwords are stored for the mailbox workers, never returned.
ALTER TABLE accounts ADD COLUMN imap jsonb;

ALTER TABLE accounts ADD COLUMN verification_checked_at timestamptz;

CREATE INDEX accounts_ws_status_idx ON accounts (workspace_id, status);

CREATE TABLE account_dns_checks (
  account_id integer PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
  domain text NOT NULL,
  spf text NOT NULL CHECK (spf IN ('pass','fail','missing')),
  dkim text NOT NULL CHECK (dkim IN ('pass','fail','missing')),
  dmarc text NOT NULL CHECK (dmarc IN ('pass','fail','missing')),
  mx text NOT NULL CHECK (mx IN ('pass','fail','missing')),
  checked_at timestamptz NOT NULL
);

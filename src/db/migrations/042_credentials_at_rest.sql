-- Credentials at rest (README, "Credentials at rest"): the SMTP/IMAP passwords and the OAuth access
-- token of a mailbox are stored sealed by the backend (AES-256-GCM under CREDENTIAL_KEYS), one text
-- envelope per value that names the key it was sealed under: kgc1.<key id>.<nonce>.<ciphertext>.<tag>.
-- The connection settings (host, port, username, secure) stay readable in accounts.smtp / accounts.imap.

ALTER TABLE accounts ADD COLUMN smtp_password_sealed text;

ALTER TABLE accounts ADD COLUMN imap_password_sealed text;

ALTER TABLE accounts ADD COLUMN oauth_access_token_sealed text;

-- SQL holds no key, so values written before this migration wait here, in plaintext, until the backend
-- seals them at its next start (before it answers any request) and empties the column.
ALTER TABLE accounts ADD COLUMN credentials_plaintext jsonb;

UPDATE accounts
   SET credentials_plaintext = jsonb_strip_nulls(jsonb_build_object(
         'smtp_password', smtp->>'password', 'imap_password', imap->>'password', 'oauth_access_token', oauth_access_token)),
       smtp = smtp - 'password',
       imap = imap - 'password'
 WHERE smtp ? 'password' OR imap ? 'password' OR oauth_access_token IS NOT NULL;

ALTER TABLE accounts DROP COLUMN oauth_access_token;

-- A code path that would still write a password into the settings, or plaintext into a sealed column,
-- fails here instead of leaving a credential readable in the database.
ALTER TABLE accounts ADD CONSTRAINT accounts_credentials_sealed CHECK (
  NOT coalesce(smtp ? 'password', false) AND NOT coalesce(imap ? 'password', false)
  AND coalesce(smtp_password_sealed LIKE 'kgc1.%', true)
  AND coalesce(imap_password_sealed LIKE 'kgc1.%', true)
  AND coalesce(oauth_access_token_sealed LIKE 'kgc1.%', true));

-- Keys over time: an expiry instant, a second (previous) secret during a rotation's grace period,
-- and a small JSON object the upstream receives in the signed identity (at most 1 KiB as compact JSON,
-- checked by the service layer; the database bound is looser because jsonb text adds spaces).
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
ALTER TABLE api_keys ADD COLUMN metadata jsonb CHECK (metadata IS NULL OR (jsonb_typeof(metadata) = 'object' AND octet_length(metadata::text) <= 2048));
ALTER TABLE api_keys ADD COLUMN rotated_at timestamptz;
ALTER TABLE api_keys ADD COLUMN previous_key_hash text UNIQUE;
ALTER TABLE api_keys ADD COLUMN previous_hint text;
ALTER TABLE api_keys ADD COLUMN previous_expires_at timestamptz;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_previous_complete CHECK ((previous_key_hash IS NULL) = (previous_expires_at IS NULL));

-- Last use, per secret (keyed by its hash): written by each gateway in batches, at most once per
-- secret per minute. A table of its own so that these writes never fire the access notification
-- of api_keys (which would evict every cached principal of the organization each minute).
CREATE TABLE api_key_last_use (
  key_hash text PRIMARY KEY,
  key_id integer NOT NULL REFERENCES api_keys(id),
  last_used_at timestamptz NOT NULL
);
CREATE INDEX api_key_last_use_key_idx ON api_key_last_use (key_id);

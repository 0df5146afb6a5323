-- A check value per credential key id (README, "Credentials at rest"): HMAC-SHA256 under the key of a
-- fixed label, recorded at the first start that proves the key (src/backend/credentials/key-checks.ts).
-- A start whose CREDENTIAL_KEYS holds other bytes under a recorded id stops before it re-seals anything.
-- The value reveals nothing of the key: it is one output of a keyed hash, like a key check value of a HSM.
CREATE TABLE credential_key_checks (
  key_id text PRIMARY KEY,
  check_value text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now()
);

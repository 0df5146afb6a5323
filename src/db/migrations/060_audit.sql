-- The audit trail of access changes: append-only. Every change made through src/access/service/
-- writes one row in the transaction of the change. UPDATE, DELETE and TRUNCATE are refused by
-- triggers; the retention purge (keygate_purge_audit below) is the only deleter.

CREATE TABLE audit_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  actor_kind text NOT NULL CHECK (actor_kind IN ('admin-token','user','cli','internal','seed')),
  -- admin-token: the token's id; user: the user id; cli: the operating-system user; else null
  actor_id text,
  actor_name text,
  action text NOT NULL CHECK (action ~ '^[a-z][a-z-]*\.[a-z][a-z-]*$'),
  target_type text NOT NULL,
  target_ids text[] NOT NULL DEFAULT '{}',
  organization_id integer,
  before jsonb,
  after jsonb,
  request_id text
);
CREATE INDEX audit_events_at_idx ON audit_events (at);
CREATE INDEX audit_events_org_idx ON audit_events (organization_id, at);
CREATE INDEX audit_events_target_idx ON audit_events USING gin (target_ids);

-- The purge names its cut-off in a transaction-local setting; a row is deleted only when it is older
-- than that cut-off and the cut-off itself is at least a day old, so a session that sets the value by
-- hand still cannot remove a recent row.
CREATE FUNCTION keygate_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  cutoff timestamptz;
BEGIN
  IF TG_OP = 'DELETE' THEN
    cutoff := nullif(current_setting('keygate.audit_purge_before', true), '')::timestamptz;
    IF cutoff IS NOT NULL AND cutoff <= now() - interval '1 day' AND OLD.at < cutoff THEN
      RETURN OLD;
    END IF;
  END IF;
  RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events FOR EACH ROW EXECUTE FUNCTION keygate_audit_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events FOR EACH STATEMENT EXECUTE FUNCTION keygate_audit_append_only();

-- The retention purge (AUDIT_RETENTION_DAYS, at least 1): deletes the rows older than the cut-off.
CREATE FUNCTION keygate_purge_audit(cutoff timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  PERFORM set_config('keygate.audit_purge_before', cutoff::text, true);
  DELETE FROM audit_events WHERE at < cutoff;
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM set_config('keygate.audit_purge_before', '', true);
  RETURN n;
END $$;

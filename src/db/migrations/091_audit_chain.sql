-- The audit trail made tamper-evident, and writable by a role that owns nothing (deploy/README.md, Two
-- database roles; docs/service-layer.md, The audit trail).
--
-- Each row carries a hash over its content and the hash of the row before it (prev_hash), so a row
-- edited, removed or added behind the triggers' back (by the owner, who can disable them, or a
-- superuser) breaks the chain at that row; `keygate audit verify` recomputes it. audit_chain holds the
-- chain's two ends: the hash the oldest kept row must follow (the last purged row's, '' before any
-- purge) and the newest row's, so rows removed at either end are seen too. It also holds the retention
-- the owner recorded (AUDIT_RETENTION_DAYS at `keygate migrate`): the purge never deletes younger rows,
-- whatever its caller asks for.
--
-- The database stamps what the writer must not choose: the row's id (its place in the chain), its
-- time and the role that connected (db_user). The programs' role inserts only through
-- keygate_audit_append, and purges only through keygate_purge_audit (both SECURITY DEFINER).

ALTER TABLE audit_events DROP CONSTRAINT audit_events_actor_kind_check;
-- api-key: a /v2 request changed access (a workspace's members), its key id as the actor id.
ALTER TABLE audit_events ADD CONSTRAINT audit_events_actor_kind_check CHECK (actor_kind IN ('admin-token','user','cli','internal','seed','api-key'));
ALTER TABLE audit_events ADD COLUMN db_user text;
ALTER TABLE audit_events ADD COLUMN prev_hash text;
ALTER TABLE audit_events ADD COLUMN hash text;

CREATE TABLE audit_chain (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  anchor_hash text NOT NULL DEFAULT '',
  head_id bigint,
  head_hash text NOT NULL DEFAULT '',
  retention_days integer NOT NULL DEFAULT 365 CHECK (retention_days BETWEEN 1 AND 36500),
  purged_at timestamptz
);
INSERT INTO audit_chain DEFAULT VALUES;

-- The hash of a row: SHA-256 of its predecessor's hash, a newline, and its content as one JSON array
-- (PostgreSQL's jsonb text is canonical; the time as microseconds since the epoch). src/access/service/
-- audit.ts verifyAudit builds the same text in its own query and hashes it itself.
CREATE FUNCTION keygate_audit_hash(e audit_events) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT encode(sha256(convert_to(coalesce(e.prev_hash, '') || E'\n' || jsonb_build_array(
    e.id, (extract(epoch FROM e.at) * 1000000)::bigint, e.db_user, e.actor_kind, e.actor_id, e.actor_name,
    e.action, e.target_type, to_jsonb(e.target_ids), e.organization_id, e.before, e.after, e.request_id
  )::text, 'UTF8')), 'hex')
$$;

-- Every insert, whoever makes it: one at a time under the chain's row lock, the id drawn under that lock
-- so that id order is chain order, the time and role stamped here.
CREATE FUNCTION keygate_audit_chain() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  head audit_chain;
BEGIN
  SELECT * INTO head FROM audit_chain FOR UPDATE;
  NEW.id := nextval(pg_get_serial_sequence('audit_events', 'id'));
  NEW.at := clock_timestamp();
  NEW.db_user := session_user;
  NEW.prev_hash := head.head_hash;
  NEW.hash := keygate_audit_hash(NEW);
  UPDATE audit_chain SET head_id = NEW.id, head_hash = NEW.hash;
  RETURN NEW;
END $$;

-- The rows written before this migration join the chain in id order.
ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only;
DO $$
DECLARE
  r record;
  prev text := '';
BEGIN
  FOR r IN SELECT id FROM audit_events ORDER BY id LOOP
    UPDATE audit_events SET prev_hash = prev WHERE id = r.id;
    UPDATE audit_events e SET hash = keygate_audit_hash(e) WHERE e.id = r.id RETURNING e.hash INTO prev;
  END LOOP;
  UPDATE audit_chain SET head_hash = prev, head_id = (SELECT max(id) FROM audit_events);
END $$;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only;

CREATE TRIGGER audit_events_chain BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION keygate_audit_chain();

-- The purge names the first id it keeps in a transaction-local setting; a row is deleted only below it
-- and only when older than the recorded retention, so a session that sets the value by hand still
-- cannot remove a row the retention keeps.
CREATE OR REPLACE FUNCTION keygate_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  below bigint;
  keep integer;
BEGIN
  IF TG_OP = 'DELETE' THEN
    below := nullif(current_setting('keygate.audit_purge_below', true), '')::bigint;
    SELECT retention_days INTO keep FROM audit_chain;
    IF below IS NOT NULL AND OLD.id < below AND OLD.at < now() - make_interval(days => keep) THEN
      RETURN OLD;
    END IF;
  END IF;
  RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;

DROP FUNCTION keygate_purge_audit(timestamptz);

-- The retention purge: deletes the oldest rows, up to the first one younger than `days` or than the
-- recorded retention, whichever keeps more, and always a prefix of the chain (so what stays verifies
-- from the anchor it leaves: the hash of the last row it deleted).
CREATE FUNCTION keygate_purge_audit(days integer) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  head audit_chain;
  below bigint;
  anchor text;
  n bigint;
BEGIN
  SELECT * INTO head FROM audit_chain FOR UPDATE;
  SELECT min(id) INTO below FROM audit_events
   WHERE at >= now() - make_interval(days => greatest(coalesce(days, 0), head.retention_days));
  below := coalesce(below, coalesce(head.head_id, 0) + 1);
  SELECT hash INTO anchor FROM audit_events WHERE id < below ORDER BY id DESC LIMIT 1;
  IF anchor IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM set_config('keygate.audit_purge_below', below::text, true);
  DELETE FROM audit_events WHERE id < below;
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM set_config('keygate.audit_purge_below', '', true);
  UPDATE audit_chain SET anchor_hash = anchor, purged_at = now();
  RETURN n;
END $$;

-- The only way the programs' role writes the trail: the row's id, time, role and hashes are the
-- database's (keygate_audit_chain).
CREATE FUNCTION keygate_audit_append(p_actor_kind text, p_actor_id text, p_actor_name text, p_action text, p_target_type text, p_target_ids text[], p_organization_id integer, p_before jsonb, p_after jsonb, p_request_id text) RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$
  INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, target_type, target_ids, organization_id, before, after, request_id)
  VALUES (p_actor_kind, p_actor_id, p_actor_name, p_action, p_target_type, p_target_ids, p_organization_id, p_before, p_after, p_request_id)
  RETURNING id
$$;

-- A SECURITY DEFINER function resolves names in this schema only, never in a caller's temporary one.
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION keygate_audit_chain() SET search_path = %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION keygate_purge_audit(integer) SET search_path = %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION keygate_audit_append(text, text, text, text, text, text[], integer, jsonb, jsonb, text) SET search_path = %I, pg_temp', current_schema());
END $$;
REVOKE EXECUTE ON FUNCTION keygate_purge_audit(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION keygate_audit_append(text, text, text, text, text, text[], integer, jsonb, jsonb, text) FROM PUBLIC;

-- Run by the owner (`keygate migrate` with DATABASE_APP_ROLE, after every migration): what the
-- programs' role may do in this schema, and nothing more. It reads every table; it writes the tables
-- the programs write, and deletes from those the programs delete from; the trail, its chain, the
-- migrations' record and the pepper it only reads, and it writes the trail through the two functions;
-- it may move the other sequences (the seed sets them past the ids it names).
CREATE FUNCTION keygate_grant_app(app name) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  t record;
BEGIN
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), app);
  FOR t IN
    SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'S')
  LOOP
    EXECUTE format('REVOKE ALL ON %I FROM %I', t.relname, app);
    IF t.relkind = 'S' THEN
      IF t.relname <> 'audit_events_id_seq' THEN
        EXECUTE format('GRANT USAGE, SELECT, UPDATE ON SEQUENCE %I TO %I', t.relname, app);
      END IF;
    ELSIF t.relname IN ('audit_events', 'audit_chain', 'schema_migrations', 'settings') THEN
      EXECUTE format('GRANT SELECT ON %I TO %I', t.relname, app);
    ELSIF t.relname IN ('accounts', 'account_tags', 'memberships', 'provider_workspaces', 'warmup_messages') THEN
      EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO %I', t.relname, app);
    ELSE
      EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %I TO %I', t.relname, app);
    END IF;
  END LOOP;
  EXECUTE format('GRANT EXECUTE ON FUNCTION keygate_purge_audit(integer) TO %I', app);
  EXECUTE format('GRANT EXECUTE ON FUNCTION keygate_audit_append(text, text, text, text, text, text[], integer, jsonb, jsonb, text) TO %I', app);
END $$;
REVOKE EXECUTE ON FUNCTION keygate_grant_app(name) FROM PUBLIC;

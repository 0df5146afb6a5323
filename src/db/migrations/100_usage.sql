-- The usage history (docs/usage.md, Storage; src/access/usage/): how many answered requests each key had
-- per minute, hour and day, by outcome. Every gateway instance adds its counts in batches with
-- INSERT ... ON CONFLICT DO UPDATE SET count = count + EXCLUDED.count, all three tables in one transaction,
-- so the sums over instances are exact and no rollup job can lag behind or count twice.
--
-- Partitioned by time so retention drops whole partitions (never a DELETE row by row): usage_minute by
-- day, usage_hour and usage_day by month (UTC). The partitions are created ahead by the writer
-- (keygate_usage_partition) and dropped past their retention (keygate_usage_drop); no default
-- partition, since a row outside every partition must make its partition rather than hide in one that
-- can never be dropped.
--
-- organization_id and key_id are 0 for an answer given before any key was resolved.
--
-- A key's chart reads the primary key's prefix; an organization's reads the organization index, which
-- carries outcome and count so the chart is an index-only scan: without them an organization of 1,000
-- keys read 7 days of every key's hour rows from the heap, 200 to 300 ms at 10,000 keys (bench/usage/
-- storage.ts, bench/RESULTS.md). count in an index makes its updates non-HOT: each flush writes both
-- indexes of the rows it changes.

CREATE TABLE usage_minute (
  bucket timestamptz NOT NULL,
  organization_id integer NOT NULL,
  key_id integer NOT NULL,
  outcome text NOT NULL,
  count bigint NOT NULL,
  PRIMARY KEY (key_id, outcome, bucket)
) PARTITION BY RANGE (bucket);
CREATE INDEX usage_minute_organization ON usage_minute (organization_id, bucket) INCLUDE (outcome, count);

CREATE TABLE usage_hour (
  bucket timestamptz NOT NULL,
  organization_id integer NOT NULL,
  key_id integer NOT NULL,
  outcome text NOT NULL,
  count bigint NOT NULL,
  PRIMARY KEY (key_id, outcome, bucket)
) PARTITION BY RANGE (bucket);
CREATE INDEX usage_hour_organization ON usage_hour (organization_id, bucket) INCLUDE (outcome, count);

CREATE TABLE usage_day (
  bucket timestamptz NOT NULL,
  organization_id integer NOT NULL,
  key_id integer NOT NULL,
  outcome text NOT NULL,
  count bigint NOT NULL,
  PRIMARY KEY (key_id, outcome, bucket)
) PARTITION BY RANGE (bucket);
CREATE INDEX usage_day_organization ON usage_day (organization_id, bucket) INCLUDE (outcome, count);

-- A partition's name tells its range: usage_minute_pYYYYMMDD holds that UTC day, usage_hour_pYYYYMM and
-- usage_day_pYYYYMM that UTC month.
CREATE FUNCTION keygate_usage_range(tbl text, at timestamptz, OUT name text, OUT lo timestamptz, OUT hi timestamptz)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  utc timestamp := at AT TIME ZONE 'UTC';
BEGIN
  IF tbl = 'usage_minute' THEN
    name := tbl || '_p' || to_char(utc, 'YYYYMMDD');
    lo := date_trunc('day', utc) AT TIME ZONE 'UTC';
    hi := (date_trunc('day', utc) + interval '1 day') AT TIME ZONE 'UTC';
  ELSIF tbl IN ('usage_hour', 'usage_day') THEN
    name := tbl || '_p' || to_char(utc, 'YYYYMM');
    lo := date_trunc('month', utc) AT TIME ZONE 'UTC';
    hi := (date_trunc('month', utc) + interval '1 month') AT TIME ZONE 'UTC';
  ELSE
    RAISE EXCEPTION 'not a usage table: %', tbl;
  END IF;
END $$;

-- Partitions are made and dropped by whoever may write the history (the programs' role, which owns
-- nothing: deploy/README.md, Two database roles), through these two functions run as their owner. A
-- caller must hold INSERT on the table: that role may already change any count, so dropping a
-- partition gives it nothing more. One advisory lock per schema serialises them across instances.
CREATE FUNCTION keygate_usage_partition(tbl text, at timestamptz) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  r record;
BEGIN
  IF tbl NOT IN ('usage_minute', 'usage_hour', 'usage_day') THEN
    RAISE EXCEPTION 'not a usage table: %', tbl;
  END IF;
  IF NOT has_table_privilege(session_user, format('%I.%I', current_schema(), tbl), 'INSERT') THEN
    RAISE EXCEPTION 'permission denied for %', tbl USING ERRCODE = '42501';
  END IF;
  PERFORM pg_advisory_xact_lock(7355610, hashtext(current_schema()));
  SELECT * INTO r FROM keygate_usage_range(tbl, at);
  IF to_regclass(format('%I.%I', current_schema(), r.name)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I FOR VALUES FROM (%L) TO (%L)',
    current_schema(), r.name, current_schema(), tbl, r.lo, r.hi);
  RETURN true;
END $$;

-- Drops every partition of `tbl` whose whole range lies before `before`; returns their names.
CREATE FUNCTION keygate_usage_drop(tbl text, before timestamptz) RETURNS SETOF text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  part text;
  hi timestamptz;
BEGIN
  IF tbl NOT IN ('usage_minute', 'usage_hour', 'usage_day') THEN
    RAISE EXCEPTION 'not a usage table: %', tbl;
  END IF;
  IF NOT has_table_privilege(session_user, format('%I.%I', current_schema(), tbl), 'INSERT') THEN
    RAISE EXCEPTION 'permission denied for %', tbl USING ERRCODE = '42501';
  END IF;
  PERFORM pg_advisory_xact_lock(7355610, hashtext(current_schema()));
  FOR part IN
    SELECT c.relname FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE i.inhparent = format('%I.%I', current_schema(), tbl)::regclass
       AND c.relname ~ ('^' || tbl || '_p[0-9]{6}([0-9]{2})?$')
     ORDER BY c.relname
  LOOP
    SELECT r.hi INTO hi FROM keygate_usage_range(tbl,
      to_date(substring(part FROM '_p([0-9]+)$') || CASE WHEN tbl = 'usage_minute' THEN '' ELSE '01' END, 'YYYYMMDD')::timestamp
        AT TIME ZONE 'UTC') r;
    IF hi <= before THEN
      EXECUTE format('DROP TABLE %I.%I', current_schema(), part);
      RETURN NEXT part;
    END IF;
  END LOOP;
END $$;

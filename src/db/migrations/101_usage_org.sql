-- The usage history per organization (docs/usage.md, Storage): the counts of usage_minute, usage_hour
-- and usage_day summed over the organization's keys, so an organization's chart reads one row per
-- bucket and outcome instead of one per key. An organization of 1,000 keys read 30 days of every key's
-- day rows, 221 to 634 ms (bench/usage/storage.ts, bench/RESULTS.md). The writer adds to these in the
-- same transaction and with the same upsert as the key tables, so they stay the exact sums of them.
--
-- The primary key leads with the organization and the bucket: a chart is one index range scan.
-- Partitioned, named, made and dropped as the key tables are, by the same upkeep and retention.

CREATE TABLE usage_org_minute (
  bucket timestamptz NOT NULL,
  organization_id integer NOT NULL,
  outcome text NOT NULL,
  count bigint NOT NULL,
  PRIMARY KEY (organization_id, bucket, outcome)
) PARTITION BY RANGE (bucket);

CREATE TABLE usage_org_hour (
  bucket timestamptz NOT NULL,
  organization_id integer NOT NULL,
  outcome text NOT NULL,
  count bigint NOT NULL,
  PRIMARY KEY (organization_id, bucket, outcome)
) PARTITION BY RANGE (bucket);

CREATE TABLE usage_org_day (
  bucket timestamptz NOT NULL,
  organization_id integer NOT NULL,
  outcome text NOT NULL,
  count bigint NOT NULL,
  PRIMARY KEY (organization_id, bucket, outcome)
) PARTITION BY RANGE (bucket);

-- 100_usage.sql's functions, taking the organization tables too (minute partitions by day, the others
-- by month, under the same names).
CREATE OR REPLACE FUNCTION keygate_usage_range(tbl text, at timestamptz, OUT name text, OUT lo timestamptz, OUT hi timestamptz)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  utc timestamp := at AT TIME ZONE 'UTC';
BEGIN
  IF tbl IN ('usage_minute', 'usage_org_minute') THEN
    name := tbl || '_p' || to_char(utc, 'YYYYMMDD');
    lo := date_trunc('day', utc) AT TIME ZONE 'UTC';
    hi := (date_trunc('day', utc) + interval '1 day') AT TIME ZONE 'UTC';
  ELSIF tbl IN ('usage_hour', 'usage_day', 'usage_org_hour', 'usage_org_day') THEN
    name := tbl || '_p' || to_char(utc, 'YYYYMM');
    lo := date_trunc('month', utc) AT TIME ZONE 'UTC';
    hi := (date_trunc('month', utc) + interval '1 month') AT TIME ZONE 'UTC';
  ELSE
    RAISE EXCEPTION 'not a usage table: %', tbl;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION keygate_usage_partition(tbl text, at timestamptz) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  r record;
BEGIN
  IF tbl NOT IN ('usage_minute', 'usage_hour', 'usage_day', 'usage_org_minute', 'usage_org_hour', 'usage_org_day') THEN
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

CREATE OR REPLACE FUNCTION keygate_usage_drop(tbl text, before timestamptz) RETURNS SETOF text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  part text;
  hi timestamptz;
BEGIN
  IF tbl NOT IN ('usage_minute', 'usage_hour', 'usage_day', 'usage_org_minute', 'usage_org_hour', 'usage_org_day') THEN
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
      to_date(substring(part FROM '_p([0-9]+)$') || CASE WHEN tbl LIKE '%minute' THEN '' ELSE '01' END, 'YYYYMMDD')::timestamp
        AT TIME ZONE 'UTC') r;
    IF hi <= before THEN
      EXECUTE format('DROP TABLE %I.%I', current_schema(), part);
      RETURN NEXT part;
    END IF;
  END LOOP;
END $$;

-- The counts written before this migration: each key partition's organization partition made, and
-- its rows summed into it. (Instances still running the previous writer during a rolling deploy add to
-- the key tables only; their counts from now until they stop are missing here.)
DO $$
DECLARE
  tbl text;
  part text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['usage_minute', 'usage_hour', 'usage_day'] LOOP
    FOR part IN
      SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = format('%I.%I', current_schema(), tbl)::regclass
         AND c.relname ~ ('^' || tbl || '_p[0-9]{6}([0-9]{2})?$')
    LOOP
      PERFORM keygate_usage_partition(replace(tbl, 'usage_', 'usage_org_'),
        to_date(substring(part FROM '_p([0-9]+)$') || CASE WHEN tbl = 'usage_minute' THEN '' ELSE '01' END, 'YYYYMMDD')::timestamp
          AT TIME ZONE 'UTC');
    END LOOP;
  END LOOP;
END $$;
INSERT INTO usage_org_minute SELECT bucket, organization_id, outcome, sum(count) FROM usage_minute GROUP BY 1, 2, 3;
INSERT INTO usage_org_hour SELECT bucket, organization_id, outcome, sum(count) FROM usage_hour GROUP BY 1, 2, 3;
INSERT INTO usage_org_day SELECT bucket, organization_id, outcome, sum(count) FROM usage_day GROUP BY 1, 2, 3;

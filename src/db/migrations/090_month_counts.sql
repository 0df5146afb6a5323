-- A monthly quota's counts, checkpointed by every gateway instance that uses Redis (src/limits/
-- month-checkpoint.ts; docs/limits.md, Monthly quotas): when Redis loses a month's counter (a restart
-- without persistence, a failover to a replica that was resynchronising), the gateway restores it from
-- here before spending on it. `used` only grows: every writer upserts with greatest(). A counter id is
-- the rate limiter's (m:<organization id>); the month is its first instant (UTC).
CREATE TABLE month_counts (
  counter_id text NOT NULL,
  month_start timestamptz NOT NULL,
  used bigint NOT NULL CHECK (used >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (counter_id, month_start)
);

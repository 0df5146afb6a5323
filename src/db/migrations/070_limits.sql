-- Per-customer limits and monthly quotas (docs/limits.md).
-- Plans are data (PLANS_FILE): the database keeps the plan's name, checked for shape only, so a plan
-- added to the file needs no migration. An unknown name gets the Free plan's limits.
ALTER TABLE organizations DROP CONSTRAINT IF EXISTS organizations_plan_check;
ALTER TABLE organizations ADD CONSTRAINT organizations_plan_name CHECK (plan IS NULL OR plan ~ '^[a-z][a-z0-9_]{0,39}$');

-- Overrides of the per-minute budgets, per organization and per key; NULL keeps the layer above
-- (key, then organization, then plan). The monthly quota is per organization only: NULL is the
-- plan's monthlyQuota, and monthly_quota_off true removes a plan's quota for this organization.
ALTER TABLE organizations
  ADD COLUMN limit_read integer CHECK (limit_read IS NULL OR limit_read > 0),
  ADD COLUMN limit_write integer CHECK (limit_write IS NULL OR limit_write > 0),
  ADD COLUMN limit_bulk integer CHECK (limit_bulk IS NULL OR limit_bulk > 0),
  ADD COLUMN monthly_quota bigint CHECK (monthly_quota IS NULL OR monthly_quota > 0),
  ADD COLUMN monthly_quota_off boolean NOT NULL DEFAULT false;

ALTER TABLE api_keys
  ADD COLUMN limit_read integer CHECK (limit_read IS NULL OR limit_read > 0),
  ADD COLUMN limit_write integer CHECK (limit_write IS NULL OR limit_write > 0),
  ADD COLUMN limit_bulk integer CHECK (limit_bulk IS NULL OR limit_bulk > 0);

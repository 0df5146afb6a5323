-- A v1 maxSendingLimit below v2's floor (v1_warmup_settings.max_below_floor) stands only until some
-- other writer sets accounts.warmup_max_limit (a /v2 PATCH, a due lowered max, a plan cap): then the
-- shared column is the max again. The v1 PATCH writes accounts first and its own row after, so its
-- own value survives. Fires whenever the column is in the SET list, even with an unchanged value.
CREATE FUNCTION v1_reset_max_below_floor() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE v1_warmup_settings SET max_below_floor = NULL WHERE account_id = NEW.id AND max_below_floor IS NOT NULL;
  RETURN NULL;
END $$;

CREATE TRIGGER accounts_v1_max_below_floor AFTER UPDATE OF warmup_max_limit ON accounts FOR EACH ROW EXECUTE FUNCTION v1_reset_max_below_floor();
